import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const REPO = path.resolve(import.meta.dirname, '../..');

/** An earlier commit of this repository, checked out beside it to be measured against it in one run. */
export interface BaseCheckout {
  readonly ref: string;
  readonly root: string;
  remove(): void;
}

/**
 * `ref` in a worktree of its own, with this checkout's installed dependencies (the same versions:
 * the lockfile's external packages did not change) and its own workspace packages.
 */
export function checkoutBase(ref: string): BaseCheckout {
  const scratch = mkdtempSync(path.join(tmpdir(), 'tg-bench-base-'));
  const root = path.join(scratch, 'checkout');
  execFileSync('git', ['worktree', 'add', '--detach', root, ref], { cwd: REPO, stdio: 'ignore' });
  const modules = path.join(root, 'node_modules');
  mkdirSync(path.join(modules, '@taskgate'), { recursive: true });
  for (const entry of readdirSync(path.join(REPO, 'node_modules'))) {
    if (entry === '@taskgate') continue;
    symlinkSync(path.join(REPO, 'node_modules', entry), path.join(modules, entry));
  }
  for (const top of ['packages', 'apps']) {
    for (const name of readdirSync(path.join(root, top))) {
      const manifest = JSON.parse(readFileSync(path.join(root, top, name, 'package.json'), 'utf8')) as { name: string };
      symlinkSync(path.join(root, top, name), path.join(modules, manifest.name));
    }
  }
  return {
    ref,
    root,
    remove: () => {
      execFileSync('git', ['worktree', 'remove', '--force', root], { cwd: REPO, stdio: 'ignore' });
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
