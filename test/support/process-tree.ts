import { readdirSync, readFileSync } from 'node:fs';

/**
 * The live (not zombie) processes whose command line has `arg` as one of its words, as "pid argv":
 * how tests and benchmarks find a ctx.spawn() tree in /proc (each gives its `sleep` a unique number
 * of seconds). Zombies are left out: nothing reaps orphans on this machine.
 */
export function liveProcessesWith(arg: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\u0000');
      if (!argv.includes(arg)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') continue;
      found.push(`${entry} ${argv.filter(Boolean).join(' ')}`);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return found;
}
