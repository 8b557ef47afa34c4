import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Writes migration files into a new temporary directory and returns its path. */
export async function writeMigrations(files: Readonly<Record<string, string>>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'taskgate-migrations-'));
  for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
  return dir;
}

/** Three small migrations that build on each other, for exercising the runner step by step. */
export const THREE_STEPS = {
  '0001_alpha.up.sql': 'CREATE TABLE fixture_alpha (id integer PRIMARY KEY);\n',
  '0001_alpha.down.sql': 'DROP TABLE fixture_alpha;\n',
  '0002_beta.up.sql':
    'ALTER TABLE fixture_alpha ADD COLUMN note text;\nCREATE INDEX fixture_alpha_note_idx ON fixture_alpha (note);\n',
  '0002_beta.down.sql': 'ALTER TABLE fixture_alpha DROP COLUMN note;\n',
  '0003_gamma.up.sql': 'CREATE TABLE fixture_gamma (alpha_id integer REFERENCES fixture_alpha (id));\n',
  '0003_gamma.down.sql': 'DROP TABLE fixture_gamma;\n',
} as const;
