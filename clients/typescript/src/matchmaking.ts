import { Connection, type ConnectionEvents, type ConnectionOptions } from "./connection.js";
import { MatchmakingClient, type ClientOptions } from "./http.js";

export interface MatchmakingOptions extends ClientOptions, Omit<ConnectionOptions, "token"> {}

/**
 * The HTTP calls and the player's WebSocket in one object, sharing one
 * token source: `mm.join(...)` and friends are {@link MatchmakingClient}'s,
 * `mm.on(...)`, `mm.connect()` and `mm.close()` the {@link Connection}'s
 * (also at `mm.socket`).
 */
export class Matchmaking extends MatchmakingClient {
  readonly socket: Connection;

  constructor(options: MatchmakingOptions) {
    super(options);
    const { token } = options;
    // The socket asks the same source, told the HTTP API's URL too (devToken mints there).
    this.socket = new Connection({
      ...options,
      token: typeof token === "string" ? token : (request) => token({ ...request, httpUrl: this.httpUrl }),
    });
  }

  on<K extends keyof ConnectionEvents>(type: K, listener: (event: ConnectionEvents[K]) => void): () => void {
    return this.socket.on(type, listener);
  }

  once<K extends keyof ConnectionEvents>(type: K, listener: (event: ConnectionEvents[K]) => void): () => void {
    return this.socket.once(type, listener);
  }

  waitFor<K extends keyof ConnectionEvents>(
    type: K,
    matches?: (event: ConnectionEvents[K]) => boolean,
    timeoutMs?: number,
  ): Promise<ConnectionEvents[K]> {
    return this.socket.waitFor(type, matches, timeoutMs);
  }

  /** Opens the WebSocket (connect before joining: pushes go to open sockets). */
  connect(): Promise<void> {
    return this.socket.connect();
  }

  /** Closes the WebSocket for good. */
  close(): void {
    this.socket.close();
  }
}
