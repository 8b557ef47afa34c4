import { expect } from 'vitest';

export interface ProblemResponse {
  readonly statusCode: number;
  readonly headers: Record<string, unknown>;
  readonly body: string;
}

/** Asserts an RFC 9457 problem with this status and Taskgate code; returns its body. */
export function expectProblem(response: ProblemResponse, status: number, code: string): Record<string, unknown> {
  expect({ status: response.statusCode, body: response.body.slice(0, 300) }).toMatchObject({ status });
  expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  const body = JSON.parse(response.body) as Record<string, unknown>;
  expect(body).toMatchObject({
    status,
    code,
    type: `urn:taskgate:error:${code.toLowerCase().replaceAll('_', '-')}`,
    title: expect.any(String),
    detail: expect.any(String),
  });
  return body;
}
