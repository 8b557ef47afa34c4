/**
 * The few PostgreSQL wire-protocol frames the embedded bridge needs to read or write itself.
 * Backend messages are a type byte, an int32 length (counting itself) and a body.
 */

const READY_FOR_QUERY = 0x5a; // 'Z'
const TERMINATE = 0x58; // 'X'

/** Transaction status from ReadyForQuery: idle, in a transaction block, or in a failed one. */
export type TransactionStatus = 'I' | 'T' | 'E';

/**
 * Follows a stream of backend messages split into arbitrary chunks and remembers the transaction
 * status of the last ReadyForQuery seen. ReadyForQuery ends every unit of work (a simple Query,
 * or an extended-protocol batch at its Sync), so "last status is I" means the connection is at a
 * boundary and holds no transaction.
 */
export class ReadyForQueryScanner {
  #header = new Uint8Array(5);
  #headerLength = 0;
  #type = 0;
  #bodyRemaining = 0;
  #status: TransactionStatus | null = null;

  get lastStatus(): TransactionStatus | null {
    return this.#status;
  }

  push(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.#bodyRemaining > 0) {
        const take = Math.min(this.#bodyRemaining, chunk.length - offset);
        if (this.#type === READY_FOR_QUERY) {
          // The body of ReadyForQuery is the single status byte.
          this.#status = String.fromCharCode(chunk[offset + take - 1] as number) as TransactionStatus;
        }
        offset += take;
        this.#bodyRemaining -= take;
        continue;
      }
      this.#header[this.#headerLength++] = chunk[offset++] as number;
      if (this.#headerLength === 5) {
        this.#type = this.#header[0] as number;
        const length = new DataView(this.#header.buffer).getInt32(1);
        this.#bodyRemaining = length - 4;
        this.#headerLength = 0;
      }
    }
  }
}

export function isTerminate(message: Uint8Array): boolean {
  return message[0] === TERMINATE;
}

/** Sync: ends an extended-protocol batch, even one the backend is skipping after an error. */
export function syncMessage(): Uint8Array {
  return Uint8Array.of(0x53, 0, 0, 0, 4);
}

/** A simple Query message. */
export function queryMessage(sql: string): Uint8Array {
  const text = Buffer.from(`${sql}\0`, 'utf8');
  const message = Buffer.alloc(5 + text.length);
  message[0] = 0x51; // 'Q'
  message.writeInt32BE(4 + text.length, 1);
  text.copy(message, 5);
  return message;
}

/** An ErrorResponse with severity, SQLSTATE and message, as a server would send it. */
export function errorResponse(severity: 'ERROR' | 'FATAL', sqlState: string, text: string): Uint8Array {
  const fields = Buffer.concat([
    field('S', severity),
    field('V', severity),
    field('C', sqlState),
    field('M', text),
    Buffer.from([0]),
  ]);
  const message = Buffer.alloc(5 + fields.length);
  message[0] = 0x45; // 'E'
  message.writeInt32BE(4 + fields.length, 1);
  fields.copy(message, 5);
  return message;
}

function field(code: string, value: string): Buffer {
  return Buffer.concat([Buffer.from(code, 'ascii'), Buffer.from(value, 'utf8'), Buffer.from([0])]);
}
