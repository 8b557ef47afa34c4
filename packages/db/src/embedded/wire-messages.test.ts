import { describe, expect, it } from 'vitest';
import { errorResponse, queryMessage, ReadyForQueryScanner } from './wire-messages.ts';

/** CommandComplete("SELECT 1") followed by ReadyForQuery(status). */
function backendOutput(status: 'I' | 'T' | 'E'): Uint8Array {
  const tag = Buffer.from('SELECT 1\0');
  const complete = Buffer.alloc(5 + tag.length);
  complete[0] = 0x43;
  complete.writeInt32BE(4 + tag.length, 1);
  tag.copy(complete, 5);
  return Buffer.concat([complete, Buffer.from([0x5a, 0, 0, 0, 5, status.charCodeAt(0)])]);
}

describe('ReadyForQueryScanner', () => {
  it('reads the status of the last ReadyForQuery', () => {
    const scanner = new ReadyForQueryScanner();
    scanner.push(backendOutput('T'));
    expect(scanner.lastStatus).toBe('T');
    scanner.push(backendOutput('I'));
    expect(scanner.lastStatus).toBe('I');
  });

  it('reads it however the stream is split into chunks, down to single bytes', () => {
    const bytes = Buffer.concat([backendOutput('I'), backendOutput('E')]);
    for (let size = 1; size <= bytes.length; size++) {
      const scanner = new ReadyForQueryScanner();
      for (let offset = 0; offset < bytes.length; offset += size) scanner.push(bytes.subarray(offset, offset + size));
      expect(scanner.lastStatus).toBe('E');
    }
  });

  it('reports null when no unit of work ended (between Parse and Sync)', () => {
    const scanner = new ReadyForQueryScanner();
    scanner.push(Buffer.from([0x31, 0, 0, 0, 4])); // ParseComplete
    expect(scanner.lastStatus).toBeNull();
  });

  it('does not mistake a Z byte inside another message for ReadyForQuery', () => {
    const scanner = new ReadyForQueryScanner();
    const text = Buffer.from('Z\0\0\0\x05I\0');
    const notice = Buffer.alloc(5 + text.length);
    notice[0] = 0x4e;
    notice.writeInt32BE(4 + text.length, 1);
    text.copy(notice, 5);
    scanner.push(notice);
    expect(scanner.lastStatus).toBeNull();
  });
});

describe('frames the bridge writes', () => {
  it('builds a Query message with its length and terminator', () => {
    const message = Buffer.from(queryMessage('ROLLBACK'));
    expect(message[0]).toBe(0x51);
    expect(message.readInt32BE(1)).toBe(message.length - 1);
    expect(message.subarray(5).toString()).toBe('ROLLBACK\0');
  });

  it('builds an ErrorResponse with severity, SQLSTATE and message fields', () => {
    const message = Buffer.from(errorResponse('FATAL', '55P03', 'waited'));
    expect(message[0]).toBe(0x45);
    expect(message.readInt32BE(1)).toBe(message.length - 1);
    expect(message.subarray(5).toString()).toBe('SFATAL\0VFATAL\0C55P03\0Mwaited\0\0');
  });
});
