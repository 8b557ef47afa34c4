// Reads one HTTP/1.1 response at a time off a keep-alive connection, from bytes as they arrive in a
// buffer the socket reuses (net's `onread`), without building the body: the load generator must not
// allocate a 100 KB string per answer, whose garbage collection pauses it would count as the
// server's latency. It still checks what makes a response an answer: its status, that the body is
// all there (Content-Length, or chunked framing to its last chunk), and that `expect` is in it,
// wherever the reads (or the chunks) split it.

/** What one response was, once it ended. */
export interface ReadResponse {
  readonly status: number;
  /** Whether the body contains `expect`. */
  readonly found: boolean;
  /** The server said `connection: close`: the next request needs a new connection. */
  readonly close: boolean;
  /** The body, when the reader was asked to keep it (the generator parses its first answers). */
  readonly body: Buffer | null;
}

type State = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'done';

const HEAD_LIMIT = 64 * 1024;

export class HttpResponseReader {
  readonly #expect: Buffer;
  readonly #expectText: string;
  #state: State = 'done';
  #text = '';
  #status = 0;
  #close = false;
  #remaining = 0;
  #found = false;
  /** The body's last expect.length - 1 bytes so far (latin1), for a match split across two pieces. */
  #carry = '';
  #kept: Buffer[] | null = null;

  constructor(expect: string) {
    this.#expect = Buffer.from(expect);
    this.#expectText = this.#expect.toString('latin1');
  }

  /** Starts reading the next response; `keep` keeps its body for the caller. */
  begin(keep = false): void {
    this.#state = 'head';
    this.#text = '';
    this.#status = 0;
    this.#close = false;
    this.#remaining = 0;
    this.#found = this.#expect.length === 0;
    this.#carry = '';
    this.#kept = keep ? [] : null;
  }

  /**
   * Takes bytes [0, end) of `buffer`, which the caller reuses once this returns. Returns the
   * response when these bytes ended it, null while it goes on. Throws on a response it cannot
   * frame, and on bytes past the end of a response (a closed-loop client never pipelines).
   */
  push(buffer: Buffer, end: number): ReadResponse | null {
    let at = 0;
    while (at < end) {
      switch (this.#state) {
        case 'head':
          at = this.#head(buffer, at, end);
          break;
        case 'length': {
          const take = Math.min(this.#remaining, end - at);
          this.#body(buffer, at, at + take);
          at += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = 'done';
          break;
        }
        case 'chunk-size':
        case 'chunk-end':
        case 'trailers':
          at = this.#line(buffer, at, end);
          break;
        case 'chunk-data': {
          const take = Math.min(this.#remaining, end - at);
          this.#body(buffer, at, at + take);
          at += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = 'chunk-end';
          break;
        }
        case 'done':
          throw new Error('the server sent bytes past the end of its response');
      }
    }
    return this.#state === 'done' ? this.#result() : null;
  }

  /** Whether a response has begun and not ended (a connection closing now cut it short). */
  get reading(): boolean {
    return this.#state !== 'done';
  }

  #result(): ReadResponse {
    return {
      status: this.#status,
      found: this.#found,
      close: this.#close,
      body: this.#kept === null ? null : Buffer.concat(this.#kept),
    };
  }

  #head(buffer: Buffer, at: number, end: number): number {
    const upTo = this.#until(buffer, at, end, '\r\n\r\n', HEAD_LIMIT);
    if (upTo === null) return end;
    const [head, next] = upTo;
    const [statusLine = '', ...lines] = head.split('\r\n');
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!status) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine.slice(0, 80))}`);
    this.#status = Number(status[1]);
    let length: number | null = null;
    let chunked = false;
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line
        .slice(colon + 1)
        .trim()
        .toLowerCase();
      if (name === 'content-length') length = Number(value);
      else if (name === 'transfer-encoding') chunked = value.split(',').at(-1)?.trim() === 'chunked';
      else if (name === 'connection') this.#close = value.split(',').some((token) => token.trim() === 'close');
    }
    if (chunked) this.#state = 'chunk-size';
    else if (length !== null && Number.isSafeInteger(length) && length >= 0) {
      this.#remaining = length;
      this.#state = length === 0 ? 'done' : 'length';
    } else if (this.#status === 204 || this.#status === 304 || (this.#status >= 100 && this.#status < 200)) {
      this.#state = 'done';
    } else throw new Error('a response with neither Content-Length nor chunked framing');
    return next;
  }

  /** The CRLF-ended lines of chunked framing: a chunk's size, the CRLF after its data, trailers. */
  #line(buffer: Buffer, at: number, end: number): number {
    const upTo = this.#until(buffer, at, end, '\r\n', 4096);
    if (upTo === null) return end;
    const [line, next] = upTo;
    if (this.#state === 'chunk-end') {
      if (line !== '') throw new Error('a chunk is longer than its size');
      this.#state = 'chunk-size';
    } else if (this.#state === 'chunk-size') {
      const size = Number.parseInt(line.split(';')[0]?.trim() ?? '', 16);
      if (!Number.isSafeInteger(size) || size < 0) throw new Error(`a bad chunk size: ${JSON.stringify(line)}`);
      this.#remaining = size;
      this.#state = size === 0 ? 'trailers' : 'chunk-data';
    } else if (line === '') this.#state = 'done'; // the blank line after the trailers
    return next;
  }

  /**
   * The text before `delimiter` and the offset just past it, or null when this read ends first (the
   * bytes are kept). Only these short framing parts are decoded, never the body after them.
   */
  #until(buffer: Buffer, at: number, end: number, delimiter: string, limit: number): [string, number] | null {
    // A delimiter split by the read: the end of what was kept and the start of this read.
    const kept = this.#text.slice(-(delimiter.length - 1));
    const seam = kept + buffer.toString('latin1', at, Math.min(end, at + delimiter.length - 1));
    const split = kept === '' ? -1 : seam.indexOf(delimiter);
    let text: string;
    let next: number;
    if (split >= 0) {
      next = at + split + delimiter.length - kept.length;
      text = (this.#text + buffer.toString('latin1', at, next)).slice(0, -delimiter.length);
    } else {
      const found = buffer.subarray(at, end).indexOf(delimiter);
      if (found < 0) {
        this.#text += buffer.toString('latin1', at, end);
        if (this.#text.length > limit) throw new Error(`an HTTP framing part is over ${limit} bytes`);
        return null;
      }
      text = this.#text + buffer.toString('latin1', at, at + found);
      next = at + found + delimiter.length;
    }
    this.#text = '';
    return [text, next];
  }

  #body(buffer: Buffer, start: number, end: number): void {
    if (start === end) return;
    this.#kept?.push(Buffer.from(buffer.subarray(start, end)));
    if (this.#found) return;
    const length = this.#expect.length;
    // A match that starts in an earlier piece ends in this one within its first length - 1 bytes.
    if (this.#carry !== '') {
      const seam = this.#carry + buffer.toString('latin1', start, Math.min(end, start + length - 1));
      if (seam.includes(this.#expectText)) {
        this.#found = true;
        return;
      }
    }
    if (buffer.subarray(start, end).indexOf(this.#expect) >= 0) {
      this.#found = true;
      return;
    }
    this.#carry =
      length > 1
        ? (this.#carry + buffer.toString('latin1', Math.max(start, end - (length - 1)), end)).slice(-(length - 1))
        : '';
  }
}
