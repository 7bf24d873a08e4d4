import { Deduper, type DedupeOptions } from "./dedupe.js";
import { Emitter } from "./emitter.js";
import { resolveToken, type TokenSource } from "./token.js";
import type { MessageOf, PongMessage, ServerMessage, ServerMessageType } from "./types.js";

/** What the SDK needs of a WebSocket: the browser's, Node 22+'s, or the `ws` package's. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: unknown;
  onmessage: unknown;
  onclose: unknown;
  onerror: unknown;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** How to reconnect after the socket closed without {@link Connection.close}. */
export interface ReconnectOptions {
  /** The first delay, ms (default 500). */
  initialDelayMs?: number;
  /** The longest delay, ms (default 30 000). */
  maxDelayMs?: number;
  /** Each failed attempt multiplies the delay by this (default 2). */
  factor?: number;
  /** Wait a random 50–100 % of the delay, so clients do not return in step (default true). */
  jitter?: boolean;
  /** Give up after this many attempts in a row (default: never). */
  maxAttempts?: number;
}

export interface ConnectionOptions {
  /** The WebSocket API's URL, e.g. `wss://abc.execute-api.eu-west-1.amazonaws.com/prod` or `ws://127.0.0.1:3001`. */
  wsUrl: string;
  /** The player's JWT, or a function that returns one; asked again before every reconnect. */
  token: TokenSource;
  /** The WebSocket class; default the global one (browsers, Node 22+), else the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /** `false` never reconnects; default: exponential backoff with jitter (see {@link ReconnectOptions}). */
  reconnect?: boolean | ReconnectOptions;
  /** How often to send a heartbeat until the server's first PONG says (`heartbeatSeconds`); default 60. */
  heartbeatSeconds?: number;
  /** A heartbeat unanswered this long means the socket is dead: reconnect (ms, default 10 000). */
  pongTimeoutMs?: number;
  /** `false` delivers every repeat; default: drop repeats and stale messages (see {@link Deduper}). */
  dedupe?: boolean | DedupeOptions;
}

/** Every event a {@link Connection} emits: one per server message type, and the socket's own. */
export type ConnectionEvents = { [T in ServerMessageType]: MessageOf<T> } & {
  /** The socket opened (again, when `reconnected`). */
  open: { reconnected: boolean };
  /** The socket closed; `willReconnect` unless {@link Connection.close} was called or attempts ran out. */
  close: { code: number; reason: string; willReconnect: boolean };
  /** The next attempt starts in `delayMs`. */
  reconnecting: { attempt: number; delayMs: number };
  /** Every new server message (repeats are `duplicate` instead). */
  message: ServerMessage;
  /** A repeat (or stale copy) of a message already delivered, dropped. */
  duplicate: ServerMessage;
  /** A frame that is not JSON: the plain-text heartbeat failure (`service unavailable`, `internal error`). */
  text: { data: string };
  /** Something failed: a token source that threw, a socket error. The connection carries on. */
  error: { error: unknown };
};

export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "closed";

interface Socket {
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  terminate?: () => void;
  onopen: (() => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

const PING = JSON.stringify({ action: "ping" });

/**
 * A player's WebSocket connection: authenticates with `?token=`, sends a
 * heartbeat (`{"action":"ping"}`) at once and then every `heartbeatSeconds`
 * the server's PONG names, reconnects with exponential backoff whenever the
 * socket closes (a fresh token each time), and emits one typed event per
 * server message, without the repeats of at-least-once delivery.
 */
export class Connection extends Emitter<ConnectionEvents> {
  readonly wsUrl: string;
  #options: ConnectionOptions;
  #reconnect: Required<ReconnectOptions> | null;
  #dedupe: Deduper | null;
  #socket: Socket | null = null;
  #state: ConnectionState = "idle";
  #wanted = false;
  #opened = false;
  #attempt = 0;
  #refreshToken = false;
  #heartbeatSeconds: number;
  #timers = { heartbeat: undefined as Timer, pong: undefined as Timer, retry: undefined as Timer };
  #waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];

  constructor(options: ConnectionOptions) {
    super();
    this.wsUrl = options.wsUrl;
    this.#options = options;
    const r = options.reconnect ?? true;
    this.#reconnect =
      r === false
        ? null
        : {
            initialDelayMs: 500,
            maxDelayMs: 30_000,
            factor: 2,
            jitter: true,
            maxAttempts: Number.POSITIVE_INFINITY,
            ...(r === true ? {} : r),
          };
    const d = options.dedupe ?? true;
    this.#dedupe = d === false ? null : new Deduper(d === true ? {} : d);
    this.#heartbeatSeconds = options.heartbeatSeconds ?? 60;
  }

  get state(): ConnectionState {
    return this.#state;
  }

  /** The heartbeat interval in use: the latest PONG's `heartbeatSeconds`. */
  get heartbeatSeconds(): number {
    return this.#heartbeatSeconds;
  }

  /** Opens the socket; resolves once it is open (retrying per the reconnect options meanwhile). */
  connect(): Promise<void> {
    const opened = new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
    if (this.#state === "open") this.#settle(null);
    if (!this.#wanted) {
      this.#wanted = true;
      this.#attempt = 0;
      void this.#open();
    }
    return opened;
  }

  /** Closes the socket for good (no reconnect); `connect()` opens it again. */
  close(): void {
    this.#wanted = false;
    this.#clearTimers();
    const socket = this.#socket;
    this.#socket = null;
    const wasOpen = this.#state === "open";
    this.#state = "closed";
    if (socket) {
      detach(socket);
      socket.close(1000, "client closed");
    }
    if (wasOpen) this.emit("close", { code: 1000, reason: "client closed", willReconnect: false });
    this.#settle(new Error("connection closed before it opened"));
  }

  /** Drops the socket and opens a new one at once (e.g. after the token changed). */
  reconnect(): void {
    if (!this.#wanted) return;
    this.#lost(this.#socket, 4000, "client reconnect", 0);
  }

  /** Sends a heartbeat now (one is sent on every open and then on the server's interval anyway). */
  ping(): void {
    const socket = this.#socket;
    if (!socket || this.#state !== "open") return;
    socket.send(PING);
    if (this.#timers.pong === undefined) {
      this.#timers.pong = setTimeout(() => {
        this.#timers.pong = undefined;
        this.emit("error", { error: new Error(`no PONG within ${this.#pongTimeout()} ms; reconnecting`) });
        this.#lost(socket, 4001, "heartbeat timeout");
      }, this.#pongTimeout());
    }
  }

  #pongTimeout(): number {
    return this.#options.pongTimeoutMs ?? 10_000;
  }

  async #open(): Promise<void> {
    this.#state = this.#attempt === 0 && !this.#opened ? "connecting" : "reconnecting";
    let url: string;
    let Ctor: WebSocketConstructor;
    try {
      const token = await resolveToken(this.#options.token, { refresh: this.#refreshToken });
      url = `${this.wsUrl}${this.wsUrl.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}`;
      Ctor = this.#options.WebSocket ?? (await defaultWebSocket());
    } catch (error) {
      this.emit("error", { error });
      this.#retry(1006, "no token or no WebSocket");
      return;
    }
    if (!this.#wanted) return;
    const socket = new Ctor(url) as unknown as Socket;
    this.#socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      const reconnected = this.#opened;
      this.#opened = true;
      this.#attempt = 0;
      this.#refreshToken = false;
      this.#state = "open";
      this.emit("open", { reconnected });
      this.#settle(null);
      this.ping();
      this.#scheduleHeartbeat();
    };
    socket.onmessage = (event) => this.#receive(event.data);
    socket.onerror = (event) => {
      const error = (event as { error?: unknown }).error ?? new Error(`WebSocket error on ${this.wsUrl}`);
      this.emit("error", { error });
    };
    socket.onclose = (event) => {
      // A socket that never opened may have had its token refused: ask for a new one.
      if (!opened) this.#refreshToken = true;
      this.#lost(socket, event.code, event.reason);
    };
  }

  #receive(data: unknown): void {
    const text = typeof data === "string" ? data : String(data);
    let msg: ServerMessage;
    try {
      msg = JSON.parse(text) as ServerMessage;
    } catch {
      this.emit("text", { data: text });
      return;
    }
    if (typeof msg !== "object" || msg === null || typeof msg.type !== "string") {
      this.emit("text", { data: text });
      return;
    }
    if (msg.type === "PONG") this.#pong(msg);
    if (this.#dedupe && !this.#dedupe.accept(msg)) {
      this.emit("duplicate", msg);
      return;
    }
    this.emit("message", msg);
    this.emit(msg.type, msg as never);
  }

  #pong(msg: PongMessage): void {
    if (this.#timers.pong !== undefined) clearTimeout(this.#timers.pong);
    this.#timers.pong = undefined;
    if (msg.heartbeatSeconds > 0 && msg.heartbeatSeconds !== this.#heartbeatSeconds) {
      this.#heartbeatSeconds = msg.heartbeatSeconds;
      this.#scheduleHeartbeat();
    }
    // A lapsed registration: the server closes this socket; don't wait for it.
    if (!msg.registered) this.#lost(this.#socket, 4002, "registration lapsed", 0);
  }

  #scheduleHeartbeat(): void {
    if (this.#timers.heartbeat !== undefined) clearInterval(this.#timers.heartbeat);
    this.#timers.heartbeat = setInterval(() => this.ping(), this.#heartbeatSeconds * 1000);
  }

  /** The socket is gone (closed by the server, dead, or dropped on purpose). */
  #lost(socket: Socket | null, code: number, reason: string, delayMs?: number): void {
    if (socket !== this.#socket) return;
    const wasOpen = this.#state === "open";
    this.#clearTimers();
    this.#socket = null;
    if (socket) {
      detach(socket);
      if (socket.readyState < 2) {
        if (socket.terminate) socket.terminate();
        else socket.close(code >= 4000 && code < 5000 ? code : 1000, reason);
      }
    }
    if (!this.#wanted) return;
    const willReconnect = this.#reconnect !== null && this.#attempt < this.#reconnect.maxAttempts;
    if (wasOpen || !willReconnect) this.emit("close", { code, reason, willReconnect });
    this.#retry(code, reason, delayMs);
  }

  #retry(code: number, reason: string, delayMs?: number): void {
    const r = this.#reconnect;
    if (!this.#wanted) return;
    if (r === null || this.#attempt >= r.maxAttempts) {
      this.#wanted = false;
      this.#state = "closed";
      this.#settle(new Error(`WebSocket closed (${code} ${reason}); not reconnecting`));
      return;
    }
    this.#attempt++;
    let delay = delayMs ?? Math.min(r.maxDelayMs, r.initialDelayMs * r.factor ** (this.#attempt - 1));
    if (delayMs === undefined && r.jitter) delay = delay / 2 + (Math.random() * delay) / 2;
    delay = Math.round(delay);
    this.#state = "reconnecting";
    this.emit("reconnecting", { attempt: this.#attempt, delayMs: delay });
    this.#timers.retry = setTimeout(() => {
      this.#timers.retry = undefined;
      if (this.#wanted) void this.#open();
    }, delay);
  }

  #clearTimers(): void {
    clearInterval(this.#timers.heartbeat);
    clearTimeout(this.#timers.pong);
    clearTimeout(this.#timers.retry);
    this.#timers = { heartbeat: undefined, pong: undefined, retry: undefined };
  }

  #settle(error: Error | null): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) {
      if (error) w.reject(error);
      else w.resolve();
    }
  }
}

type Timer = ReturnType<typeof setTimeout> | undefined;

function detach(socket: Socket): void {
  socket.onopen = null;
  socket.onmessage = null;
  socket.onclose = null;
  // Keep an error handler: `ws` throws on an 'error' nobody listens to.
  socket.onerror = () => {};
}

let wsModule: Promise<WebSocketConstructor> | null = null;

/** The global WebSocket, or (Node without one, e.g. Node 20) the `ws` package's. */
export function defaultWebSocket(): Promise<WebSocketConstructor> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global) return Promise.resolve(global);
  // A computed specifier: bundlers for the browser leave it alone.
  const name = "ws";
  wsModule ??= import(name).then(
    (m: { WebSocket?: WebSocketConstructor; default?: WebSocketConstructor }) => {
      const Ctor = m.WebSocket ?? m.default;
      if (!Ctor) throw new Error("the ws package has no WebSocket export");
      return Ctor;
    },
  );
  return wsModule;
}
