import net from 'node:net';

/**
 * A TCP forwarder in front of a Postgres that a test can shut: while shut, it cuts every open
 * connection and every new one as it arrives, which a pg client sees as a real outage ("Connection
 * terminated unexpectedly"), without stopping a Postgres other tests share.
 */
export class TcpGate {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  #shut = false;

  private constructor(server: net.Server) {
    this.#server = server;
  }

  /** Listens on a loopback port of its own, forwarding to `target`'s host and port. */
  static async open(target: URL): Promise<TcpGate> {
    const server = net.createServer();
    const gate = new TcpGate(server);
    server.on('connection', (socket) => gate.#accept(socket, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return gate;
  }

  /** `url` with its host and port replaced by the gate's. */
  through(url: string): string {
    const forwarded = new URL(url);
    forwarded.hostname = '127.0.0.1';
    forwarded.port = String((this.#server.address() as net.AddressInfo).port);
    return forwarded.toString();
  }

  shut(): void {
    this.#shut = true;
    for (const socket of this.#sockets) socket.destroy();
  }

  reopen(): void {
    this.#shut = false;
  }

  async close(): Promise<void> {
    this.shut();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #accept(client: net.Socket, target: URL): void {
    if (this.#shut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
