// npm run bench -- <name>: runs bench/<name>.ts (or every benchmark, one after another, without a name).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

const dir = import.meta.dirname;
const available = readdirSync(dir)
  .filter((file) => file.endsWith('.ts') && file !== 'run.ts')
  .map((file) => file.slice(0, -3));
const [name] = process.argv.slice(2);
if (name && !available.includes(name)) {
  console.error(`unknown benchmark ${JSON.stringify(name)}; available: ${available.join(', ')}`);
  process.exit(64);
}
for (const bench of name ? [name] : available) {
  console.log(`== ${bench}`);
  const result = spawnSync(process.execPath, [path.join(dir, `${bench}.ts`)], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
