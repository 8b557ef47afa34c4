#!/usr/bin/env node
// Plain JavaScript on purpose: whatever `node` comes first on PATH runs this file (an MCP client's
// `"command": "node_modules/.bin/taskgate"`, a shell), and it may be too old for the TypeScript
// sources that Node's built-in type stripping runs. So this file only picks the Node:
// - the project's own (the `node` package's node_modules/.bin/node), found from this file's real
//   path, not the cwd, whenever it is not already the one running: the CLI runs again on it as a
//   child, with stdin/stdout/stderr handed over as they are (mcp-stdio's protocol pipe included),
//   signals forwarded and its exit status returned;
// - otherwise this Node (a container image without devDependencies), when it is new enough.
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import module from 'node:module';
import { constants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// First of all: a launcher (npm's `sh -c`, this file's parent run) that dies while this process is
// still loading must not go unnoticed (apps/cli/src/parent-watch.ts).
const parentAtStart = process.ppid;

// The signals a terminal, npm or a process manager sends to stop a process. SIGKILL cannot be
// forwarded: the child notices that its launcher is gone instead (apps/cli/src/parent-watch.ts).
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
// Tells the child which pid is its launcher (parent-watch.ts reads it).
const LAUNCHER_PID_VARIABLE = 'TG_LAUNCHER_PID';

const launcher = realpathSync(fileURLToPath(import.meta.url));
const projectNode = findProjectNode(path.dirname(launcher));

if (projectNode !== null && projectNode !== realpathSync(process.execPath)) {
  relaunch(projectNode);
} else {
  // A checkout runs the TypeScript sources; an installed package (built by scripts/pack-packages.ts)
  // has them compiled to dist/, since Node strips no types under node_modules.
  const built = existsSync(new URL('../dist/main.js', import.meta.url));
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 22 || (major === 22 && minor < 12)) {
    // A checkout has the `node` package among its devDependencies (npm ci installs it); a project
    // that installed the packages has it only if it asks for it.
    const remedy = built ? 'run npm install node@24 in your project' : 'run npm ci in the Taskgate checkout';
    process.stderr.write(
      `taskgate: Node.js ${process.versions.node} is too old for Taskgate, which needs Node.js >= 22.12: ` +
        `${remedy} to install a Node in its node_modules/.bin, which this command then uses [TG_USAGE]\n`,
    );
    process.exit(64);
  }
  // V8's compiled code of every module loaded from here on is kept on disk, so the next start
  // skips compiling it: bench/stdio-first-answer.ts measures mcp-stdio's first answer, which a
  // client's first-message timeout sees, about twice as fast as a first launch. The directory is
  // NODE_COMPILE_CACHE, else in the node_modules this file is installed in (its owner's, not a
  // world-writable temp directory another user could have made first). Quietly off where it
  // cannot be written (the call never throws) or with NODE_DISABLE_COMPILE_CACHE=1.
  // Without a node_modules to keep it in (Yarn PnP), none: Node's default is a shared temp path.
  const cacheDir = process.env.NODE_COMPILE_CACHE || compileCacheDir(path.dirname(launcher));
  if (cacheDir !== undefined) module.enableCompileCache?.(cacheDir);
  const entry = (name) => (built ? `../dist/${name}.js` : `../src/${name}.ts`);
  const { noteParentAtStart } = await import(entry('parent-watch'));
  noteParentAtStart(parentAtStart);
  const { main } = await import(entry('main'));
  const code = await main(process.argv.slice(2), {
    env: process.env,
    cwd: process.cwd(),
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
  });
  // Explicit exit: a library timer or socket that outlives shutdown must not keep the process alive.
  process.exit(code);
}

/** node_modules/.cache/taskgate-compile-cache of the nearest node_modules at or above `from`. */
function compileCacheDir(from) {
  for (let directory = from; ; directory = path.dirname(directory)) {
    if (path.basename(directory) === 'node_modules') return path.join(directory, '.cache', 'taskgate-compile-cache');
    const inside = path.join(directory, 'node_modules');
    if (existsSync(inside)) return path.join(inside, '.cache', 'taskgate-compile-cache');
    if (path.dirname(directory) === directory) return undefined;
  }
}

/** node_modules/.bin/node in the nearest directory at or above `from`, resolved; null if none. */
function findProjectNode(from) {
  if (process.platform === 'win32') return null;
  for (let directory = from; ; directory = path.dirname(directory)) {
    const candidate = path.join(directory, 'node_modules', '.bin', 'node');
    if (existsSync(candidate)) return realpathSync(candidate);
    if (path.dirname(directory) === directory) return null;
  }
}

function relaunch(node) {
  const child = spawn(node, [launcher, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, [LAUNCHER_PID_VARIABLE]: String(process.pid) },
  });
  const forward = (signal) => child.kill(signal);
  for (const signal of FORWARDED) process.on(signal, forward);
  child.on('error', (error) => {
    process.stderr.write(`taskgate: could not start ${node}: ${error.message} [TG_STARTUP_FAILED]\n`);
    process.exit(70);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 70);
    // Die of the same signal, so whoever waits for this process sees what the child's end was.
    for (const forwarded of FORWARDED) process.off(forwarded, forward);
    process.kill(process.pid, signal);
    process.exit(128 + (constants.signals[signal] ?? 0));
  });
}
