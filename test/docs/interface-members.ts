/**
 * The member names of an `interface` declared in TypeScript source, and of the interfaces it
 * extends when they are declared in the same source. A parse of the declaration's text, enough for
 * the SDK's own interfaces: comments are dropped, then the members are the names that open a
 * statement at the interface body's own brace depth.
 */
export function interfaceMembers(source: string, name: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
  const header = new RegExp(`\\binterface\\s+${name}\\b(?:<[^{]*?>)?\\s*(?:extends\\s+([^{]+))?\\{`).exec(code);
  if (!header) throw new Error(`the source declares no interface ${name}`);
  const members: string[] = [];
  let depth = 0;
  let statementStart = true;
  for (let index = header.index + header[0].length; index < code.length; index += 1) {
    const char = code[index] as string;
    if (char === '{' || char === '(' || char === '[') depth += 1;
    else if (char === ')' || char === ']') depth -= 1;
    else if (char === '}') {
      if (depth === 0) break;
      depth -= 1;
    } else if (depth === 0 && char === ';') statementStart = true;
    else if (depth === 0 && statementStart && /\S/.test(char)) {
      const member = /^(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*[:(<]/.exec(code.slice(index));
      if (member) members.push(member[1] as string);
      statementStart = false;
    }
  }
  const parents = (header[1] ?? '')
    .split(',')
    .map((parent) => parent.trim().replace(/<.*$/, ''))
    .filter((parent) => parent !== '');
  return [...members, ...parents.flatMap((parent) => interfaceMembers(source, parent))];
}
