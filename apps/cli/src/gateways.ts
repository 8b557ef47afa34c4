import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { TaskgateError } from '@taskgate/errors';
import { DownstreamConnection, gatewayTools } from '@taskgate/gateway';
import { processMetrics } from '@taskgate/metrics';
import type { GatewayDefinition } from '@taskgate/sdk';
import { type AnyTool, registryOf, type ToolModule, ToolRegistry } from '@taskgate/tools';
import type { Logger } from './logger.ts';

export interface StartedGateways {
  /** The gateways' tools now (at start, and after each change of a downstream's tools). */
  readonly tools: readonly AnyTool[];
  readonly connections: readonly DownstreamConnection[];
  /**
   * Called with the gateways' tools whenever a downstream's tools changed
   * (notifications/tools/list_changed), once they are checked: the worker serves and publishes them.
   */
  onToolsChanged(listener: (tools: readonly AnyTool[]) => void): void;
  stop(): Promise<void>;
}

/**
 * Starts the downstream MCP servers the loaded modules declare (`gateways`), for a worker of this
 * process: each is spawned or connected, initialized and listed before the worker claims
 * anything, so a downstream that cannot start stops start-up with one line naming it. Their tools
 * join the worker's; the API lists them from the catalog, as any tool a worker publishes. When a
 * downstream's tools change, its tools are made again and handed to `onToolsChanged`'s listener.
 */
export async function startGateways(modules: readonly ToolModule[], logger: Logger): Promise<StartedGateways> {
  const log = logger.child({ component: 'gateway' });
  const connections: DownstreamConnection[] = [];
  /** Each gateway's tools now, in declaration order. */
  const byGateway = new Map<string, AnyTool[]>();
  const moduleTools = new Map<string, string>(
    modules.flatMap((module) => module.tools.map((tool) => [tool.name, `module ${module.name}`] as [string, string])),
  );
  /** Who serves each name, but the gateway `except`: a module's tool, or another gateway's. */
  const servedBesides = (except: string) => {
    const served = new Map(moduleTools);
    for (const [name, tools] of byGateway) {
      if (name !== except) for (const tool of tools) served.set(tool.name, `gateway ${name}`);
    }
    return served;
  };
  const all = () => [...byGateway.values()].flat();
  const listeners: ((tools: readonly AnyTool[]) => void)[] = [];
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

  /**
   * The gateway's tools of this listing, each checked and compiled alone: one downstream tool
   * Taskgate cannot serve (a schema that does not compile) is left out, and the rest are served.
   * A name served elsewhere stops start-up (`strict`); after a change it is left out, logged.
   */
  const toolsOf = (
    gateway: GatewayDefinition,
    module: ToolModule,
    connection: DownstreamConnection,
    listed: readonly Tool[],
    strict: boolean,
  ): AnyTool[] => {
    const served = servedBesides(gateway.name);
    const ready: AnyTool[] = [];
    for (const tool of gatewayTools(gateway, connection, listed, (fields, message) => log.warn(fields, message))) {
      const other = served.get(tool.name);
      if (other !== undefined) {
        const message = `gateway ${gateway.name} of module ${module.name} publishes ${tool.name}, which ${other} serves already; give the gateway another prefix`;
        if (strict) throw new TaskgateError('TG_STARTUP_FAILED', message);
        log.warn({ gateway: gateway.name, tool: tool.name }, `a downstream tool is left out: ${message}`);
        continue;
      }
      try {
        new ToolRegistry([tool as AnyTool]);
      } catch (error) {
        log.warn(
          { gateway: gateway.name, tool: tool.name, error: (error as Error).message },
          'a downstream tool is left out: Taskgate cannot serve it',
        );
        continue;
      }
      served.set(tool.name, `gateway ${gateway.name}`);
      ready.push(tool as AnyTool);
    }
    return ready;
  };

  try {
    for (const module of modules) {
      for (const gateway of module.gateways ?? []) {
        // Set once the connection exists: its change handler needs it.
        let connection: DownstreamConnection | null = null;
        const changed = (listed: readonly Tool[]) => {
          if (connection === null) return;
          const tools = toolsOf(gateway, module, connection, listed, false);
          const before = (byGateway.get(gateway.name) ?? []).map((tool) => tool.name);
          byGateway.set(gateway.name, tools);
          log.info(
            { gateway: gateway.name, tools: tools.map((tool) => tool.name), before },
            "the downstream's tools changed: publishing them",
          );
          for (const listener of listeners) listener(all());
        };
        connection = new DownstreamConnection({
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
          onToolsChanged: changed,
        });
        connections.push(connection);
        let listed: readonly Tool[];
        try {
          listed = await connection.start();
        } catch (error) {
          throw new TaskgateError(
            'TG_STARTUP_FAILED',
            `gateway ${gateway.name} of module ${module.name}: ${(error as Error).message}`,
            { cause: error },
          );
        }
        const ready = toolsOf(gateway, module, connection, listed, true);
        byGateway.set(gateway.name, ready);
        log.info({ gateway: gateway.name, tools: ready.map((tool) => tool.name) }, 'gateway tools ready');
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    get tools() {
      return all();
    },
    connections,
    onToolsChanged: (listener) => {
      listeners.push(listener);
    },
    stop,
  };
}

/**
 * Has `worker` serve and publish the gateways' tools anew whenever a downstream's tools change,
 * one change at a time (a burst of changes ends with the last list published). `served` is what
 * the worker started with: a change between the gateways' start and the worker's is published at
 * once. A publish that fails (the database is away) is tried again every 5 s until one lands or a
 * newer change replaces it.
 */
export function followGatewayTools(
  gateways: StartedGateways,
  modules: readonly ToolModule[],
  served: readonly AnyTool[],
  worker: { replaceTools(tools: ToolRegistry): Promise<void> },
  logger: Logger,
): void {
  let queue: Promise<void> = Promise.resolve();
  let latest = 0;
  const apply = (tools: readonly AnyTool[]) => {
    latest += 1;
    const change = latest;
    const attempt = (): Promise<void> =>
      worker.replaceTools(registryOf(modules, tools)).catch(async (error: Error) => {
        logger.error(
          { error: error.message },
          "the downstream's new tools are served here but not yet published to the catalog; trying again in 5 s",
        );
        await new Promise((resolve) => setTimeout(resolve, 5_000).unref());
        if (change === latest) await attempt();
      });
    queue = queue.then(() => (change === latest ? attempt() : undefined));
  };
  gateways.onToolsChanged(apply);
  const now = gateways.tools;
  if (now.length !== served.length || now.some((tool, index) => tool !== served[index])) apply(now);
}
