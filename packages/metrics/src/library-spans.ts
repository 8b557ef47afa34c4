import type { TracerProvider } from '@opentelemetry/api';
import type { InstrumentationBase } from '@opentelemetry/instrumentation';

/**
 * HTTP server spans and Postgres client spans from OpenTelemetry's own instrumentations
 * (instrumentation-http, instrumentation-pg), for a process with tracing on. Loaded and applied
 * only then: a process without an OTLP endpoint patches nothing.
 *
 * Applied by hand, not by their require hooks: Taskgate is ESM, and `node:http` and `pg` were
 * imported long before tracing is configured, so a hook on later loads would see nothing (ESM
 * needs import-in-the-middle's loader, given on the command line). Both patch prototypes
 * (http.Server's emit, pg.Client's query and connect), which every importer shares, so patching
 * the loaded module through each instrumentation's own module definition (getModuleDefinitions,
 * the patch its require hook would have run) covers servers and pools made before and after.
 */

/** Paths whose requests get no span: probes and scrapes, and a collector served in this process. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics', '/v1/traces']);

export async function instrumentLibraries(provider: TracerProvider): Promise<() => void> {
  const [{ HttpInstrumentation }, { PgInstrumentation }, http, pg] = await Promise.all([
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('node:http'),
    import('pg'),
  ]);
  // enabled: false, so that the constructors install no require hook (see above).
  const httpSpans = new HttpInstrumentation({
    enabled: false,
    // Outgoing calls are the OTLP exporter's own and webhooks; only the server side is asked for.
    disableOutgoingRequestInstrumentation: true,
    ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '/').split('?', 1)[0] as string),
  });
  // Only queries inside a span: the pollers, heartbeats and LISTEN of a process would otherwise
  // each start a trace of their own, several a second.
  const pgSpans = new PgInstrumentation({ enabled: false, requireParentSpan: true });
  const patched = [patch(httpSpans, provider, 'http', http.default), patch(pgSpans, provider, 'pg', pg.default)];
  return () => {
    for (const unpatch of patched) unpatch();
  };
}

function patch(
  instrumentation: InstrumentationBase,
  provider: TracerProvider,
  name: string,
  moduleExports: unknown,
): () => void {
  instrumentation.setTracerProvider(provider);
  const definition = instrumentation.getModuleDefinitions().find((entry) => entry.name === name);
  if (definition?.patch === undefined) {
    throw new Error(`${instrumentation.instrumentationName} has no module definition for ${name}`);
  }
  definition.patch(moduleExports);
  return () => definition.unpatch?.(moduleExports);
}
