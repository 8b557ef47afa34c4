/**
 * Just enough Markdown for the documentation tests: the lines outside fenced code blocks, the
 * links in them, and the anchors GitHub gives their headings.
 */

/** The lines of `text` that are not inside a fenced code block. */
export function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** The targets of inline links and images (`[text](target)`), outside code spans and blocks. */
export function markdownLinks(text: string): string[] {
  // A link's text may wrap onto the next line, so lines are joined before matching.
  const prose = proseLines(text)
    .join('\n')
    .replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((match) => match[1] as string);
}

/**
 * GitHub's anchor for each heading, in order: the text lowercased, code marks and punctuation
 * dropped (letters, digits, `-` and `_` stay), each space a `-`; a repeated anchor gets `-1`, `-2`.
 */
export function headingSlugs(text: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = (heading[1] as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  return slugs;
}
