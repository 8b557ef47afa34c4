import {
  context,
  type Link,
  propagation,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';

/**
 * OpenTelemetry traces of tasks, when an OTLP endpoint is configured: one span per task attempt
 * (on the worker that ran it), linked to the request that created the task. The request's
 * context travels with the task row (tasks.trace_parent, W3C traceparent): the caller's own when
 * it sent one (an HTTP `traceparent` header, or `_meta.traceparent` on an MCP request, MCP
 * 2026-07-28 basic "OpenTelemetry trace context"), else that of a span the API starts for the
 * creation. Linked rather than parented: an attempt may run long after, and more than once.
 *
 * Inside a process the spans nest: an HTTP request's server span (instrumentation-http, its
 * parent the caller's `traceparent` header) holds the creation's span, which holds the Postgres
 * client spans of the task's INSERT (instrumentation-pg); an attempt's span holds those of its
 * run (library-spans.ts).
 */

/** W3C Trace Context, version 00: the only one this parses; anything else is ignored, as the spec asks. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span context a traceparent names, or null when it is not a valid one (all-zero ids are not). */
export function parseTraceParent(value: unknown): SpanContext | null {
  if (typeof value !== 'string') return null;
  const match = TRACEPARENT.exec(value);
  if (!match) return null;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
}

export function formatTraceParent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0')}`;
}

/** A task as its attempt span describes it. */
export interface TracedAttempt {
  readonly id: string;
  readonly tool: string;
  readonly attempt: number;
  readonly traceParent: string | null;
}

/** One attempt's span: ended once, with how the attempt ended. */
export interface AttemptSpan {
  /** A stop reached the attempt (its signal), as an event on the span. */
  stopped(signal: string): void;
  /** Runs the attempt with this span active: the Postgres spans of its run are its children. */
  run<T>(attempt: () => Promise<T>): Promise<T>;
  end(outcome: { readonly status: string; readonly message?: string | undefined }): void;
}

/**
 * Builds the tracing of a process: the SDK and its exporter are loaded only here, so a process
 * without an OTLP endpoint never loads them (mcp-stdio's start-up is measured in milliseconds).
 */
export async function createTaskTracing(options: {
  /** Where spans go over OTLP/HTTP (JSON), or an exporter of the caller's. */
  readonly url?: string;
  readonly exporter?: SpanExporter;
  readonly serviceName: string;
  /** How long spans wait to be sent in a batch (default 1 s). */
  readonly scheduledDelayMillis?: number;
}): Promise<TaskTracing> {
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { instrumentLibraries }] =
    await Promise.all([
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('./library-spans.ts'),
    ]);
  const [{ BatchSpanProcessor, TracerProvider }, { resourceFromAttributes }, { OTLPTraceExporter }] = await Promise.all(
    [
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/exporter-trace-otlp-http'),
    ],
  );
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: options.exporter ?? new OTLPTraceExporter(options.url === undefined ? {} : { url: options.url }),
        scheduledDelayMillis: options.scheduledDelayMillis ?? 1_000,
        // Bounded: a collector that is down costs at most this many spans of memory.
        maxQueueSize: 2_048,
      }),
    ],
  });
  // The active span follows the request (and the attempt) across awaits, which is how a pg span
  // finds its parent; the propagator is what instrumentation-http reads `traceparent` with.
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const ownsContext = context.setGlobalContextManager(contextManager);
  const ownsPropagation = propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const unpatch = await instrumentLibraries(provider);
  return new TaskTracing(provider.getTracer('taskgate'), async () => {
    unpatch();
    if (ownsPropagation) propagation.disable();
    if (ownsContext) context.disable();
    await provider.shutdown();
  });
}

export class TaskTracing {
  readonly #tracer: Tracer;
  readonly #shutdown: () => Promise<void>;

  constructor(tracer: Tracer, shutdown: () => Promise<void>) {
    this.#tracer = tracer;
    this.#shutdown = shutdown;
  }

  /**
   * Runs a task's creation in a span of its own, with that span active (the INSERT's Postgres
   * spans are its children), and hands `create` the traceparent the task is stored with: the
   * caller's, when valid; else that of this span, so the attempt still links to something the
   * collector has. The span's parent is the active span (the HTTP server span, itself the child
   * of a `traceparent` header), unless the caller named another trace (MCP's `_meta.traceparent`
   * on a POST without the header): then the caller's span.
   */
  async creating<T>(
    callerTraceParent: unknown,
    attributes: { readonly tool: string },
    create: (traceParent: string) => Promise<T>,
  ): Promise<T> {
    const caller = parseTraceParent(callerTraceParent);
    const active = trace.getActiveSpan()?.spanContext();
    const parent =
      caller !== null && active?.traceId !== caller.traceId
        ? trace.setSpanContext(context.active(), caller)
        : context.active();
    const span = this.#tracer.startSpan(
      'taskgate.task.create',
      {
        kind: trace.getSpan(parent) === undefined ? SpanKind.SERVER : SpanKind.INTERNAL,
        attributes: { 'taskgate.tool': attributes.tool },
      },
      parent,
    );
    const traceParent = formatTraceParent(caller ?? span.spanContext());
    try {
      return await context.with(trace.setSpan(parent, span), () => create(traceParent));
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  }

  /**
   * Names the active HTTP server span by its route (`POST /v1/tasks`, attribute http.route):
   * instrumentation-http sees the request before the router, and names it by its method alone.
   */
  nameRequestSpan(method: string, route: string): void {
    const span = trace.getActiveSpan();
    if (span === undefined) return;
    span.setAttribute('http.route', route);
    span.updateName(`${method} ${route}`);
  }

  attempt(task: TracedAttempt): AttemptSpan {
    const origin = parseTraceParent(task.traceParent);
    const links: Link[] = origin === null ? [] : [{ context: origin }];
    const span = this.#tracer.startSpan('taskgate.task.attempt', {
      kind: SpanKind.CONSUMER,
      links,
      attributes: { 'taskgate.task.id': task.id, 'taskgate.tool': task.tool, 'taskgate.attempt': task.attempt },
    });
    let ended = false;
    return {
      stopped: (signal) => {
        if (!ended) span.addEvent('taskgate.stop', { 'taskgate.signal': signal });
      },
      run: (attempt) => context.with(trace.setSpan(context.active(), span), attempt),
      end: (outcome) => {
        if (ended) return;
        ended = true;
        span.setAttribute('taskgate.task.status', outcome.status);
        if (outcome.status === 'failed') {
          span.setStatus({ code: SpanStatusCode.ERROR, ...(outcome.message ? { message: outcome.message } : {}) });
        } else {
          span.setStatus({ code: SpanStatusCode.OK });
        }
        span.end();
      },
    };
  }

  /** Sends what is queued and stops (a process that stops flushes its last spans). */
  async shutdown(): Promise<void> {
    await this.#shutdown();
  }
}

let processWide: TaskTracing | null = null;

/**
 * Turns traces on for this process, sending spans over OTLP/HTTP (JSON) to `url` (the CLI takes
 * it from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT). Without it nothing
 * is set up and tracing costs nothing.
 */
export async function configureTracing(options: {
  readonly url: string;
  readonly serviceName: string;
}): Promise<TaskTracing> {
  processWide ??= await createTaskTracing(options);
  return processWide;
}

/**
 * Creates a task with what it keeps of its caller's trace context (tasks.trace_parent): with
 * tracing on, inside a creation span (TaskTracing.creating); off, the caller's traceparent if it is
 * valid (a worker with tracing on still links to it), else nothing.
 */
export function traceCreation<T>(
  caller: unknown,
  attributes: { readonly tool: string },
  create: (traceParent: string | null) => Promise<T>,
): Promise<T> {
  if (processWide !== null) return processWide.creating(caller, attributes, create);
  const valid = parseTraceParent(caller);
  return create(valid === null ? null : formatTraceParent(valid));
}

/** Replaces the process's tracing (tests give theirs an exporter of their own); null turns it off. */
export function setProcessTracing(tracing: TaskTracing | null): void {
  processWide = tracing;
}

/** The process's tracing, or null when no OTLP endpoint is configured. */
export function processTracing(): TaskTracing | null {
  return processWide;
}
