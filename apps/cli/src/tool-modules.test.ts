import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isTaskgateError } from '@taskgate/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/cli.ts';
import { defaultsDeclaredAbove, projectDefaults, toolModulesOf } from './tool-modules.ts';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'taskgate-defaults-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function project(name: string, manifest: unknown, files: readonly string[] = []): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(path.join(dir, 'sub'), { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify(manifest));
  for (const file of files) await writeFile(path.join(dir, file), 'export const tools = [];\n');
  return dir;
}

describe("a project's default tool modules", () => {
  it("are the checkout's demo modules, declared in its package.json, not known to the CLI", () => {
    expect(defaultsDeclaredAbove(REPO_ROOT)).toEqual({
      file: path.join(REPO_ROOT, 'package.json'),
      tools: [path.join(REPO_ROOT, 'examples/demo/index.ts'), path.join(REPO_ROOT, 'examples/ledger/index.ts')],
      present: true,
      conformanceTools: path.join(REPO_ROOT, 'examples/conformance/index.ts'),
    });
  });

  it('are read from the nearest package.json above the working directory that declares them', async () => {
    const dir = await project('own', { name: 'own', taskgate: { tools: ['./tools.ts'] } }, ['tools.ts']);
    expect(projectDefaults(path.join(dir, 'sub'))).toEqual({
      file: path.join(dir, 'package.json'),
      tools: [path.join(dir, 'tools.ts')],
      present: true,
      conformanceTools: null,
    });
  });

  it("are none where no package.json declares any, and else the CLI's own checkout's", async () => {
    const dir = await project('plain', { name: 'plain' });
    expect(defaultsDeclaredAbove(dir)).toBeNull();
    expect(projectDefaults(dir)?.file).toBe(path.join(REPO_ROOT, 'package.json'));
  });

  it('are not served where the files declared are missing, as in an image built without them', async () => {
    const dir = await project('image', { taskgate: { tools: ['./examples/a.ts'] } });
    expect(projectDefaults(dir)).toMatchObject({ present: false });
    expect(await toolModulesOf([], { toolModules: [], conformanceTools: false }, dir)).toEqual([]);
  });

  it('refuse a "taskgate" field of another shape, naming the file', async () => {
    const dir = await project('wrong', { taskgate: { tools: 'tools.ts' } });
    try {
      projectDefaults(dir);
      expect.unreachable();
    } catch (error) {
      expect(isTaskgateError(error, 'TG_CONFIG_INVALID')).toBe(true);
      expect((error as Error).message).toContain(path.join(dir, 'package.json'));
    }
  });
});
