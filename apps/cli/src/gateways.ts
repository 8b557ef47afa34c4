import { TaskgateError } from '@taskgate/errors';
import { DownstreamConnection, gatewayTools } from '@taskgate/gateway';
import { processMetrics } from '@taskgate/metrics';
import { type AnyTool, type ToolModule, ToolRegistry } from '@taskgate/tools';
import type { Logger } from './logger.ts';

export interface StartedGateways {
  readonly tools: readonly AnyTool[];
  readonly connections: readonly DownstreamConnection[];
  stop(): Promise<void>;
}

/**
 * Starts the downstream MCP servers the loaded modules declare (`gateways`), for a worker of this
 * process: each is spawned, initialized and listed before the worker claims anything, so a
 * downstream that cannot start stops start-up with one line naming it. Their tools join the
 * worker's; the API lists them from the catalog, as any tool a worker publishes.
 */
export async function startGateways(modules: readonly ToolModule[], logger: Logger): Promise<StartedGateways> {
  const log = logger.child({ component: 'gateway' });
  const connections: DownstreamConnection[] = [];
  const tools: AnyTool[] = [];
  /** Who serves each name already: a module's tool, or an earlier gateway's. */
  const servedBy = new Map<string, string>(
    modules.flatMap((module) => module.tools.map((tool) => [tool.name, `module ${module.name}`] as [string, string])),
  );
  const metrics = processMetrics();
  const unwatch = metrics.watchDownstreams(() =>
    connections.map((connection) => ({
      server: connection.name,
      up: connection.connected,
      inFlight: connection.inFlight.length,
    })),
  );
  const stop = async () => {
    unwatch();
    await Promise.all(connections.map((connection) => connection.close()));
  };
  try {
    for (const module of modules) {
      for (const gateway of module.gateways ?? []) {
        const connection = new DownstreamConnection({
          name: gateway.name,
          ...(gateway.stdio ? { stdio: gateway.stdio } : {}),
          ...(gateway.http ? { http: gateway.http } : {}),
          onError: (kind) => metrics.downstreamErrors.inc({ server: gateway.name, kind }),
          onOrphan: ({ tool, delta }) => {
            const labels = { kind: 'downstream', tool: `${gateway.prefix}${tool}` };
            metrics.orphans.inc(labels, delta);
            if (delta > 0) {
              metrics.orphansTotal.inc(labels);
              log.warn(
                { gateway: gateway.name, tool },
                'downstream work goes on after its cancel (its task did not end within the grace period)',
              );
            }
          },
          ...(gateway.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: gateway.connectTimeoutMs }),
          log: {
            info: (fields, message) => log.info(fields, message),
            warn: (fields, message) => log.warn(fields, message),
          },
          // The catalog is published once, at start: a change is said, and takes a worker restart.
          onToolsChanged: (listed) =>
            log.warn(
              { gateway: gateway.name, tools: listed.map((tool) => tool.name) },
              'the downstream’s tools changed; restart the worker to publish the new list',
            ),
        });
        connections.push(connection);
        let listed: Awaited<ReturnType<DownstreamConnection['start']>>;
        try {
          listed = await connection.start();
        } catch (error) {
          throw new TaskgateError(
            'TG_STARTUP_FAILED',
            `gateway ${gateway.name} of module ${module.name}: ${(error as Error).message}`,
            { cause: error },
          );
        }
        const ready: AnyTool[] = [];
        for (const tool of gatewayTools(gateway, connection, listed, (fields, message) => log.warn(fields, message))) {
          const other = servedBy.get(tool.name);
          if (other !== undefined) {
            throw new TaskgateError(
              'TG_STARTUP_FAILED',
              `gateway ${gateway.name} of module ${module.name} publishes ${tool.name}, which ${other} serves already; give the gateway another prefix`,
            );
          }
          try {
            // Checked and compiled alone: one downstream tool Taskgate cannot serve (a schema that
            // does not compile) is left out, and the rest are served.
            new ToolRegistry([tool as AnyTool]);
          } catch (error) {
            log.warn(
              { gateway: gateway.name, tool: tool.name, error: (error as Error).message },
              'a downstream tool is left out: Taskgate cannot serve it',
            );
            continue;
          }
          servedBy.set(tool.name, `gateway ${gateway.name}`);
          ready.push(tool as AnyTool);
        }
        log.info({ gateway: gateway.name, tools: ready.map((tool) => tool.name) }, 'gateway tools ready');
        tools.push(...ready);
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    tools,
    connections,
    stop,
  };
}
