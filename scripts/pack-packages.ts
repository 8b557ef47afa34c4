// Builds Taskgate's workspace packages into installable tarballs: `npm run pack:packages`, or
// `node scripts/pack-packages.ts --out DIR`. A checkout runs the TypeScript sources directly, but
// Node strips no types under node_modules, so an installed package must be JavaScript: the sources
// are compiled once (tsconfig.build.json: JavaScript plus declarations), each package is staged
// with its compiled dist/, its own files (the db package's migrations, the CLI's launcher, the console's assets) and a
// manifest whose exports point at dist/, and `npm pack` turns each stage into a tarball. Nothing
// is written into the source tree except the output folder.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Folders a package ships besides dist/ and package.json, when it has them. */
const SHIPPED = ['bin', 'console-assets', 'README.md'];
/**
 * Top-level folders of the checkout a package reads at run time, copied into it: the db package
 * finds the migrations beside its dist/ once installed (packages/db/src/migrations/migration-files.ts).
 */
const SHIPPED_FROM_ROOT: Record<string, readonly string[]> = { 'packages/db': ['migrations'] };

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  description?: string;
  license?: string;
  type?: string;
  exports?: unknown;
  bin?: Record<string, string>;
  files?: string[];
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, unknown>;
  engines?: Record<string, string>;
}

export interface PackedPackage {
  readonly name: string;
  readonly tarball: string;
}

/** Builds and packs every workspace package into `out`; returns the tarballs, one per package. */
export function packPackages(out: string, log: (line: string) => void = () => {}): PackedPackage[] {
  const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest & {
    workspaces: string[];
  };
  const stage = mkdtempSync(path.join(os.tmpdir(), 'taskgate-pack-'));
  try {
    const build = path.join(stage, 'build');
    log('compiling the sources (tsconfig.build.json)');
    execFileSync(path.join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json', '--outDir', build], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    mkdirSync(out, { recursive: true });
    const packed: PackedPackage[] = [];
    for (const folder of workspaceFolders(root.workspaces)) {
      const manifest = JSON.parse(readFileSync(path.join(ROOT, folder, 'package.json'), 'utf8')) as Manifest;
      const target = path.join(stage, 'packages', folder);
      cpSync(path.join(build, folder, 'src'), path.join(target, 'dist'), { recursive: true });
      rewriteDeclarations(path.join(target, 'dist'));
      const files = ['dist'];
      for (const extra of SHIPPED) {
        if (!existsSync(path.join(ROOT, folder, extra))) continue;
        cpSync(path.join(ROOT, folder, extra), path.join(target, extra), { recursive: true });
        files.push(extra);
      }
      for (const extra of SHIPPED_FROM_ROOT[folder] ?? []) {
        cpSync(path.join(ROOT, extra), path.join(target, extra), { recursive: true });
        files.push(extra);
      }
      writeFileSync(
        path.join(target, 'package.json'),
        `${JSON.stringify(published(manifest, root, files), null, 2)}\n`,
      );
      const [result] = JSON.parse(
        execFileSync('npm', ['pack', target, '--json', '--pack-destination', out], {
          cwd: stage,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
        }),
      ) as { filename: string }[];
      if (result === undefined) throw new Error(`npm pack wrote no tarball for ${manifest.name}`);
      packed.push({ name: manifest.name, tarball: path.join(out, result.filename) });
      log(`${manifest.name}: ${path.join(out, result.filename)}`);
    }
    return packed;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** The workspace folders (`packages/sdk`, `apps/cli`, …) the root manifest's globs name. */
function workspaceFolders(globs: readonly string[]): string[] {
  return globs.flatMap((glob) => {
    if (!glob.endsWith('/*')) throw new Error(`workspace pattern ${glob} is not of the form folder/*`);
    const parent = glob.slice(0, -2);
    return readdirSync(path.join(ROOT, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(path.join(ROOT, parent, entry.name, 'package.json')))
      .map((entry) => `${parent}/${entry.name}`)
      .sort();
  });
}

/**
 * The manifest as published: public, exports at the compiled entry and its declarations, the
 * checkout's engines and license. Dependencies stay as they are (workspace packages are pinned to
 * the one version they share).
 */
function published(manifest: Manifest, root: Manifest, files: string[]): Manifest {
  const { private: _private, exports: _exports, ...rest } = manifest;
  return {
    ...rest,
    description: manifest.description ?? `Part of Taskgate: ${root.description}`,
    license: manifest.license ?? root.license,
    exports: compiledExports(manifest.exports),
    files,
    ...(root.engines ? { engines: root.engines } : {}),
  };
}

/**
 * Each export of the checkout (`./src/x.ts`, run as TypeScript) at its compiled file and
 * declarations (`./dist/x.js`, `./dist/x.d.ts`): `@taskgate/api/stdio-front` as well as the root.
 */
function compiledExports(exports: unknown): Record<string, { types: string; default: string }> {
  const entries = typeof exports === 'string' ? { '.': exports } : (exports as Record<string, unknown> | undefined);
  const compiled: Record<string, { types: string; default: string }> = {};
  for (const [subpath, source] of Object.entries(entries ?? { '.': './src/index.ts' })) {
    if (typeof source !== 'string' || !/^\.\/src\/.+\.ts$/.test(source)) {
      throw new Error(`cannot pack export ${subpath}: ${JSON.stringify(source)} is not a ./src/*.ts file`);
    }
    const stem = source.slice('./src/'.length, -'.ts'.length);
    compiled[subpath] = { types: `./dist/${stem}.d.ts`, default: `./dist/${stem}.js` };
  }
  return compiled;
}

/**
 * Declarations keep the sources' `./x.ts` specifiers (TypeScript rewrites them only in the
 * JavaScript it emits); next to x.d.ts they must say `./x.js`, as the JavaScript does.
 */
function rewriteDeclarations(folder: string): void {
  for (const entry of readdirSync(folder, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(/((?:from |import\()\s*['"])(\.\.?\/[^'"]+)\.ts(['"])/g, '$1$2.js$3');
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: path.join(ROOT, 'dist/packs') } } });
  const out = path.resolve(values.out as string);
  const packed = packPackages(out, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`${packed.length} packages packed into ${out}\n`);
}
