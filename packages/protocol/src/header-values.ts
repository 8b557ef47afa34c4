/**
 * Header values mirrored from the body (Mcp-Name, Mcp-Param-*), 2026-07-28 Streamable HTTP
 * "Value Encoding": plain visible ASCII as is, anything else as `=?base64?{UTF-8 in Base64}?=`.
 */

const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
/** Visible ASCII, space and tab (RFC 9110 field values). */
const SAFE = /^[\x20-\x7e\t]*$/;

/** The value a header carries, decoded; null when it holds characters a header may not, or bad Base64. */
export function decodeHeaderValue(raw: string): string | null {
  // Encoded only with both markers: a value with one of them alone is a literal (clients encode
  // any literal that has both, so the two never meet).
  if (raw.startsWith('=?base64?') && raw.endsWith('?=') && raw.length >= '=?base64??='.length) {
    const encoded = SENTINEL.exec(raw)?.[1];
    // Canonical Base64 only: whole quads, padding where the length needs it (atob forgives both).
    if (encoded === undefined || encoded.length % 4 !== 0) return null;
    try {
      const binary = atob(encoded);
      return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
    } catch {
      return null;
    }
  }
  return SAFE.test(raw) ? raw : null;
}

/** How a client writes a value into a header (used by tests and the bundled client). */
export function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) || value === '';
  if (plain && !(value.startsWith('=?base64?') && value.endsWith('?='))) return value;
  const bytes = new TextEncoder().encode(value);
  return `=?base64?${btoa(String.fromCharCode(...bytes))}?=`;
}
