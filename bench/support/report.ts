/** Percentile by nearest rank over a copy of the samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function summary(samples: readonly number[]): { n: number; p50: number; p99: number; max: number } {
  return {
    n: samples.length,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: percentile(samples, 100),
  };
}

/** Prints rows as an aligned text table (the form benchmark output takes in notes and CI logs). */
export function printTable(title: string, rows: Record<string, string | number>[]): void {
  const headers = Object.keys(rows[0] ?? {});
  const cells = rows.map((row) => headers.map((header) => format(row[header])));
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...cells.map((row) => (row[column] as string).length)),
  );
  const line = (values: string[]) => values.map((value, column) => value.padEnd(widths[column] as number)).join('  ');
  console.log(`\n${title}`);
  console.log(line(headers));
  console.log(line(widths.map((width) => '-'.repeat(width))));
  for (const row of cells) console.log(line(row));
}

function format(value: string | number | undefined): string {
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(2);
  return value ?? '';
}

/** Calls `fire` `total` times at `perSecond`, on schedule (not back to back), and waits for all. */
export async function atRate(total: number, perSecond: number, fire: (index: number) => Promise<void>): Promise<void> {
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let index = 0; index < total; index++) {
    const due = started + (index * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    inFlight.push(fire(index));
  }
  await Promise.all(inFlight);
}
