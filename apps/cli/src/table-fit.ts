import { formatTable } from './terminal-text.ts';

/** A column that may be narrowed, down to `min` characters, its cells cut with an ellipsis. */
export interface Shrinkable {
  readonly column: number;
  readonly min: number;
}

/**
 * formatTable's lines, no wider than `width` where the shrinkable columns allow it: they give up
 * width in the order listed, each down to its `min`, and a cell too long for its column ends in
 * "…". The other columns (ids a person copies into the next command, statuses) are never cut. With
 * width Infinity (not a terminal) nothing is. Widths count UTF-16 units, not display cells.
 */
export function fitTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  width: number,
  shrinkable: readonly Shrinkable[],
): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  let over = widths.reduce((sum, each) => sum + each, 0) + 2 * (widths.length - 1) - width;
  for (const { column, min } of shrinkable) {
    if (over <= 0) break;
    const current = widths[column] as number;
    const floor = Math.min(current, Math.max(min, (header[column] as string).length));
    const taken = Math.min(over, current - floor);
    widths[column] = current - taken;
    over -= taken;
  }
  const cut = (cell: string, column: number) => truncate(cell, widths[column] as number);
  return formatTable(
    header,
    rows.map((row) => row.map(cut)),
  );
}

/** `text` in at most `width` characters: cut, with "…" as its last, when longer. */
export function truncate(text: string, width: number): string {
  if (text.length <= width) return text;
  if (width <= 0) return '';
  return `${text.slice(0, width - 1)}…`;
}

/** How far `iso` is from now, in the largest whole unit: "40s ago", "5m ago", "2d ago"; "in 23h" ahead. */
export function ago(iso: string, now: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const seconds = Math.floor(Math.abs(now - at) / 1000);
  const span =
    seconds < 60
      ? `${seconds}s`
      : seconds < 3600
        ? `${Math.floor(seconds / 60)}m`
        : seconds < 86_400
          ? `${Math.floor(seconds / 3600)}h`
          : `${Math.floor(seconds / 86_400)}d`;
  return at > now + 999 ? `in ${span}` : `${span} ago`;
}

/** The width a table may take: the terminal's columns on a terminal, unbounded otherwise. */
export function tableWidth(output: { readonly isTTY?: boolean; readonly columns?: number }): number {
  if (output.isTTY !== true) return Number.POSITIVE_INFINITY;
  return output.columns && output.columns > 0 ? output.columns : 80;
}
