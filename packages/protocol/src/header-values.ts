/**
 * Header values mirrored from the body (Mcp-Name, Mcp-Param-*), 2026-07-28 Streamable HTTP
 * "Value Encoding": plain visible ASCII as is, anything else as `=?base64?{UTF-8 in Base64}?=`.
 */

const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
/** Visible ASCII, space and tab (RFC 9110 field values). */
const SAFE = /^[\x20-\x7e\t]*$/;

/** The value a header carries, decoded; null when it holds characters a header may not, or bad Base64. */
export function decodeHeaderValue(raw: string): string | null {
  const encoded = SENTINEL.exec(raw);
  if (encoded) {
    try {
      const binary = atob(encoded[1] as string);
      return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
    } catch {
      return null;
    }
  }
  if (raw.startsWith('=?base64?')) return null;
  return SAFE.test(raw) ? raw : null;
}

/** How a client writes a value into a header (used by tests and the bundled client). */
export function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) || value === '';
  if (plain && !(value.startsWith('=?base64?') && value.endsWith('?='))) return value;
  const bytes = new TextEncoder().encode(value);
  return `=?base64?${btoa(String.fromCharCode(...bytes))}?=`;
}
