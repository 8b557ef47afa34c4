/**
 * Text a tenant wrote (a key, a note, a name), made safe for a terminal: control characters
 * (escape sequences that would move the cursor or rewrite the screen) are shown escaped.
 */
export function printable(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point.
    /[\u0000-\u001f\u007f-\u009f]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Rows under a header, in columns two spaces apart; the last column is not padded. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] as string).length)),
  );
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] as number)))
      .join('  ')
      .trimEnd();
  return [format(header), ...rows.map(format)];
}
