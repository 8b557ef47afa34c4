#!/usr/bin/env node
// Plain JavaScript on purpose: it must run on any Node to say clearly when the Node is too old,
// before the TypeScript sources (run by Node's built-in type stripping) are loaded.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `taskgate: Node.js ${process.versions.node} is too old; Taskgate needs Node.js >= 22.12. ` +
      'Run it through npm (npm start, npm run taskgate -- <command>, npx taskgate), which uses the ' +
      "project's own Node from node_modules/.bin. [TG_USAGE]\n",
  );
  process.exit(64);
}

const { main } = await import('../src/main.ts');
const code = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
});
// Explicit exit: a library timer or socket that outlives shutdown must not keep the process alive.
process.exit(code);
