/**
 * Capped exponential backoff with full jitter: the delay is drawn uniformly from [0, ceiling), where
 * the ceiling doubles per attempt up to a cap. Full jitter spreads clients that failed together
 * across the whole window, so they do not retry in lockstep against a recovering server.
 */
export interface BackoffOptions {
  readonly baseMs: number;
  readonly capMs: number;
}

function checkPositiveInteger(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${field} must be a positive integer number of milliseconds, got ${value}`);
  }
}

function checkAttempt(attempt: number): void {
  if (!Number.isSafeInteger(attempt) || attempt < 0) {
    throw new RangeError(`attempt must be a non-negative integer, got ${attempt}`);
  }
}

/** The ceiling before jitter: `min(capMs, baseMs * 2^attempt)`. */
export function backoffCeiling(attempt: number, options: BackoffOptions): number {
  checkAttempt(attempt);
  checkPositiveInteger('baseMs', options.baseMs);
  checkPositiveInteger('capMs', options.capMs);
  if (options.capMs < options.baseMs) {
    throw new RangeError(`capMs (${options.capMs}) must be at least baseMs (${options.baseMs})`);
  }
  // 2 ** attempt reaches Infinity for large attempts, and min() then settles on the cap.
  return Math.min(options.capMs, options.baseMs * 2 ** attempt);
}

/** A delay in whole milliseconds in [0, ceiling); `random` must return a number in [0, 1). */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number): number {
  const ceiling = backoffCeiling(attempt, options);
  const r = random();
  // A source outside [0, 1) would silently break the cap, so it is a bug worth failing on.
  if (!(r >= 0 && r < 1)) throw new RangeError(`random() must return a number in [0, 1), got ${r}`);
  return Math.floor(r * ceiling);
}

/**
 * How a delay is drawn under its ceiling. `full`: uniform in [0, ceiling), what Taskgate uses;
 * `equal`: half the ceiling plus a uniform half; `none`: the ceiling itself. The other two exist
 * so bench/reconnect-storm.ts can show, in the same run, what full jitter is measured against.
 */
export type Jitter = 'full' | 'equal' | 'none';

export function jitteredDelay(jitter: Jitter, attempt: number, options: BackoffOptions, random: () => number): number {
  if (jitter === 'full') return backoffDelay(attempt, options, random);
  const ceiling = backoffCeiling(attempt, options);
  if (jitter === 'none') return ceiling;
  const half = ceiling / 2;
  return Math.floor(half + backoffDelay(attempt, options, random) / 2);
}

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** 32-bit FNV-1a over the UTF-8 bytes of `text`, so the value matches other implementations. */
export function fnv1a32(text: string): number {
  let hash = FNV_OFFSET_BASIS;
  for (const byte of utf8Bytes(text)) {
    hash ^= byte;
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash >>> 0;
}

/**
 * A jitter value in [0, 1) fixed by `seed` (a client id, say) and `attempt`: each client still gets
 * its own spread, and a test or a log replay gets the same delays every time.
 */
export function deterministicJitter(seed: string, attempt: number): number {
  checkAttempt(attempt);
  // FNV-1a alone barely moves its high bits when only the last byte changes, so consecutive attempts
  // of one client would get nearly the same jitter; the murmur3 finaliser spreads them.
  return fmix32(fnv1a32(`${seed}:${attempt}`)) / 2 ** 32;
}

function fmix32(value: number): number {
  let h = value;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function* utf8Bytes(text: string): Generator<number> {
  for (const char of text) {
    // Lone surrogates have no UTF-8 form; U+FFFD is what TextEncoder would write for them.
    let code = char.codePointAt(0) ?? 0xfffd;
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
    if (code < 0x80) {
      yield code;
    } else if (code < 0x800) {
      yield 0xc0 | (code >> 6);
      yield 0x80 | (code & 0x3f);
    } else if (code < 0x10000) {
      yield 0xe0 | (code >> 12);
      yield 0x80 | ((code >> 6) & 0x3f);
      yield 0x80 | (code & 0x3f);
    } else {
      yield 0xf0 | (code >> 18);
      yield 0x80 | ((code >> 12) & 0x3f);
      yield 0x80 | ((code >> 6) & 0x3f);
      yield 0x80 | (code & 0x3f);
    }
  }
}
