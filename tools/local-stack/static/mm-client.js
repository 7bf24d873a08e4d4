// @matchmaking/client for the demo page: built from clients/typescript/src by
// clients/typescript/scripts/bundle.mjs (esbuild). Do not edit; run `npm run bundle`.

// src/dedupe.ts
var Deduper = class {
  #seen = /* @__PURE__ */ new Map();
  #maxKeys;
  #windowMs;
  constructor(options = {}) {
    this.#maxKeys = options.maxKeys ?? 2e3;
    this.#windowMs = options.windowMs ?? 6e4;
  }
  /** Whether `msg` is new (and remembers it); false for a repeat or a stale message. */
  accept(msg, now = Date.now()) {
    switch (msg.type) {
      case "QUEUED":
        for (const kind of ["TICKET_EXPIRED", "TICKET_REMOVED"]) this.#seen.delete(`${kind}|${msg.worldType}`);
        return true;
      case "PONG":
        return true;
      case "MATCH_FOUND":
      case "MATCH_ASSIGNED":
      case "MATCH_RESULT":
      case "MATCH_CANCELLED":
        return this.#first(`${msg.type}|${msg.matchId}`, now);
      case "MATCH_PROPOSED":
        if (this.#decided(msg.matchId)) return false;
        return this.#first(`${msg.type}|${msg.matchId}`, now);
      case "MATCH_ACCEPT_PROGRESS": {
        if (this.#decided(msg.matchId)) return false;
        const key = `${msg.type}|${msg.matchId}`;
        const before = this.#seen.get(key);
        if (before !== void 0 && before >= msg.accepted) return false;
        this.#remember(key, msg.accepted);
        return true;
      }
      case "PARTY_CANCELLED":
        return this.#first(`${msg.type}|${msg.partyId}`, now);
      case "PARTY_UPDATE": {
        if (this.#seen.has(`PARTY_CANCELLED|${msg.party.partyId}`)) return false;
        const key = `${msg.type}|${msg.party.partyId}|${stableJson(msg.party)}`;
        if (this.#seen.has(key)) return false;
        for (const k of this.#seen.keys()) {
          if (k.startsWith(`${msg.type}|${msg.party.partyId}|`)) this.#seen.delete(k);
        }
        this.#remember(key, now);
        return true;
      }
      case "TICKET_EXPIRED":
      case "TICKET_REMOVED": {
        const key = `${msg.type}|${msg.worldType}`;
        const at = this.#seen.get(key);
        if (at !== void 0 && now - at < this.#windowMs) return false;
        this.#remember(key, now);
        return true;
      }
      default:
        return true;
    }
  }
  #decided(matchId) {
    return this.#seen.has(`MATCH_FOUND|${matchId}`) || this.#seen.has(`MATCH_CANCELLED|${matchId}`);
  }
  #first(key, now) {
    if (this.#seen.has(key)) return false;
    this.#remember(key, now);
    return true;
  }
  #remember(key, value) {
    this.#seen.delete(key);
    this.#seen.set(key, value);
    while (this.#seen.size > this.#maxKeys) {
      const oldest = this.#seen.keys().next().value;
      if (oldest === void 0) break;
      this.#seen.delete(oldest);
    }
  }
};
function stableJson(value) {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

// src/emitter.ts
var Emitter = class {
  #listeners = /* @__PURE__ */ new Map();
  /** Calls `listener` for every `type` event; returns a function that removes it. */
  on(type, listener) {
    let set = this.#listeners.get(type);
    if (!set) this.#listeners.set(type, set = /* @__PURE__ */ new Set());
    set.add(listener);
    return () => this.off(type, listener);
  }
  /** Calls `listener` for the next `type` event only. */
  once(type, listener) {
    const off = this.on(type, (event) => {
      off();
      listener(event);
    });
    return off;
  }
  off(type, listener) {
    this.#listeners.get(type)?.delete(listener);
  }
  /**
   * The next `type` event for which `matches` holds, as a promise; rejects
   * after `timeoutMs` (default: never).
   */
  waitFor(type, matches = () => true, timeoutMs) {
    return new Promise((resolve, reject) => {
      let timer;
      const off = this.on(type, (event) => {
        if (!matches(event)) return;
        off();
        if (timer !== void 0) clearTimeout(timer);
        resolve(event);
      });
      if (timeoutMs !== void 0) {
        timer = setTimeout(() => {
          off();
          reject(new Error(`no ${String(type)} event within ${timeoutMs} ms`));
        }, timeoutMs);
      }
    });
  }
  emit(type, event) {
    for (const listener of [...this.#listeners.get(type) ?? []]) {
      try {
        listener(event);
      } catch (error) {
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
};

// src/token.ts
async function resolveToken(source, request) {
  return typeof source === "string" ? source : await source(request);
}
function devToken(sub, options = {}) {
  let cached = null;
  return async ({ refresh, httpUrl }) => {
    const base = (options.httpUrl ?? httpUrl ?? "http://127.0.0.1:3000").replace(/\/+$/, "");
    if (cached && !refresh && cached.base === base && Date.now() < cached.until) return cached.token;
    const doFetch = options.fetch ?? fetch;
    const res = await doFetch(`${base}/dev/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(options.claims ? { sub, claims: options.claims } : { sub })
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok || typeof body.token !== "string") {
      throw new Error(`POST ${base}/dev/token: ${res.status} ${body.message ?? "no token"}`);
    }
    cached = { token: body.token, until: Date.now() + Math.max(0, (body.expiresIn ?? 0) - 60) * 1e3, base };
    return body.token;
  };
}

// src/connection.ts
var PING = JSON.stringify({ action: "ping" });
var Connection = class extends Emitter {
  wsUrl;
  #options;
  #reconnect;
  #dedupe;
  #socket = null;
  #state = "idle";
  #wanted = false;
  #opened = false;
  #attempt = 0;
  #refreshToken = false;
  #heartbeatSeconds;
  #timers = { heartbeat: void 0, pong: void 0, retry: void 0 };
  #waiters = [];
  constructor(options) {
    super();
    this.wsUrl = options.wsUrl;
    this.#options = options;
    const r = options.reconnect ?? true;
    this.#reconnect = r === false ? null : {
      initialDelayMs: 500,
      maxDelayMs: 3e4,
      factor: 2,
      jitter: true,
      maxAttempts: Number.POSITIVE_INFINITY,
      ...r === true ? {} : r
    };
    const d = options.dedupe ?? true;
    this.#dedupe = d === false ? null : new Deduper(d === true ? {} : d);
    this.#heartbeatSeconds = options.heartbeatSeconds ?? 60;
  }
  get state() {
    return this.#state;
  }
  /** The heartbeat interval in use: the latest PONG's `heartbeatSeconds`. */
  get heartbeatSeconds() {
    return this.#heartbeatSeconds;
  }
  /** Opens the socket; resolves once it is open (retrying per the reconnect options meanwhile). */
  connect() {
    const opened = new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
    if (this.#state === "open") this.#settle(null);
    if (!this.#wanted) {
      this.#wanted = true;
      this.#attempt = 0;
      void this.#open();
    }
    return opened;
  }
  /** Closes the socket for good (no reconnect); `connect()` opens it again. */
  close() {
    this.#wanted = false;
    this.#clearTimers();
    const socket = this.#socket;
    this.#socket = null;
    const wasOpen = this.#state === "open";
    this.#state = "closed";
    if (socket) {
      detach(socket);
      socket.close(1e3, "client closed");
    }
    if (wasOpen) this.emit("close", { code: 1e3, reason: "client closed", willReconnect: false });
    this.#settle(new Error("connection closed before it opened"));
  }
  /** Drops the socket and opens a new one at once (e.g. after the token changed). */
  reconnect() {
    if (!this.#wanted) return;
    this.#lost(this.#socket, 4e3, "client reconnect", 0);
  }
  /** Sends a heartbeat now (one is sent on every open and then on the server's interval anyway). */
  ping() {
    const socket = this.#socket;
    if (!socket || this.#state !== "open") return;
    socket.send(PING);
    if (this.#timers.pong === void 0) {
      this.#timers.pong = setTimeout(() => {
        this.#timers.pong = void 0;
        this.emit("error", { error: new Error(`no PONG within ${this.#pongTimeout()} ms; reconnecting`) });
        this.#lost(socket, 4001, "heartbeat timeout");
      }, this.#pongTimeout());
    }
  }
  #pongTimeout() {
    return this.#options.pongTimeoutMs ?? 1e4;
  }
  async #open() {
    this.#state = this.#attempt === 0 && !this.#opened ? "connecting" : "reconnecting";
    let url;
    let Ctor;
    try {
      const token = await resolveToken(this.#options.token, { refresh: this.#refreshToken });
      url = `${this.wsUrl}${this.wsUrl.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}`;
      Ctor = this.#options.WebSocket ?? await defaultWebSocket();
    } catch (error) {
      this.emit("error", { error });
      this.#retry(1006, "no token or no WebSocket");
      return;
    }
    if (!this.#wanted) return;
    const socket = new Ctor(url);
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
      const error = event.error ?? new Error(`WebSocket error on ${this.wsUrl}`);
      this.emit("error", { error });
    };
    socket.onclose = (event) => {
      if (!opened) this.#refreshToken = true;
      this.#lost(socket, event.code, event.reason);
    };
  }
  #receive(data) {
    const text = typeof data === "string" ? data : String(data);
    let msg;
    try {
      msg = JSON.parse(text);
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
    this.emit(msg.type, msg);
  }
  #pong(msg) {
    if (this.#timers.pong !== void 0) clearTimeout(this.#timers.pong);
    this.#timers.pong = void 0;
    if (msg.heartbeatSeconds > 0 && msg.heartbeatSeconds !== this.#heartbeatSeconds) {
      this.#heartbeatSeconds = msg.heartbeatSeconds;
      this.#scheduleHeartbeat();
    }
    if (!msg.registered) this.#lost(this.#socket, 4002, "registration lapsed", 0);
  }
  #scheduleHeartbeat() {
    if (this.#timers.heartbeat !== void 0) clearInterval(this.#timers.heartbeat);
    this.#timers.heartbeat = setInterval(() => this.ping(), this.#heartbeatSeconds * 1e3);
  }
  /** The socket is gone (closed by the server, dead, or dropped on purpose). */
  #lost(socket, code, reason, delayMs) {
    if (socket !== this.#socket) return;
    const wasOpen = this.#state === "open";
    this.#clearTimers();
    this.#socket = null;
    if (socket) {
      detach(socket);
      if (socket.readyState < 2) {
        if (socket.terminate) socket.terminate();
        else socket.close(code >= 4e3 && code < 5e3 ? code : 1e3, reason);
      }
    }
    if (!this.#wanted) return;
    const willReconnect = this.#reconnect !== null && this.#attempt < this.#reconnect.maxAttempts;
    if (wasOpen || !willReconnect) this.emit("close", { code, reason, willReconnect });
    this.#retry(code, reason, delayMs);
  }
  #retry(code, reason, delayMs) {
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
    if (delayMs === void 0 && r.jitter) delay = delay / 2 + Math.random() * delay / 2;
    delay = Math.round(delay);
    this.#state = "reconnecting";
    this.emit("reconnecting", { attempt: this.#attempt, delayMs: delay });
    this.#timers.retry = setTimeout(() => {
      this.#timers.retry = void 0;
      if (this.#wanted) void this.#open();
    }, delay);
  }
  #clearTimers() {
    clearInterval(this.#timers.heartbeat);
    clearTimeout(this.#timers.pong);
    clearTimeout(this.#timers.retry);
    this.#timers = { heartbeat: void 0, pong: void 0, retry: void 0 };
  }
  #settle(error) {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) {
      if (error) w.reject(error);
      else w.resolve();
    }
  }
};
function detach(socket) {
  socket.onopen = null;
  socket.onmessage = null;
  socket.onclose = null;
  socket.onerror = () => {
  };
}
var wsModule = null;
function defaultWebSocket() {
  const global = globalThis.WebSocket;
  if (global) return Promise.resolve(global);
  const name = "ws";
  wsModule ??= import(name).then(
    (m) => {
      const Ctor = m.WebSocket ?? m.default;
      if (!Ctor) throw new Error("the ws package has no WebSocket export");
      return Ctor;
    }
  );
  return wsModule;
}

// src/errors.ts
var ApiError = class extends Error {
  constructor(message, status, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
  status;
  body;
  name = "ApiError";
};
var MatchmakingError = class extends ApiError {
  name = "MatchmakingError";
  /** The stable code (`data.error`). */
  code;
  /** The code's details (`data`, including `error`). */
  data;
  /** The server's message for humans (`msg`); it may change, programs read `code` and `data`. */
  msg;
  constructor(status, msg, data, body) {
    super(`${status} ${data.error}: ${msg}`, status, body);
    this.code = data.error;
    this.data = data;
    this.msg = msg;
  }
  /** Whether this is the error `code` (and narrows `data` to that code's details). */
  is(code) {
    return this.code === code;
  }
};
var GatewayError = class extends ApiError {
  name = "GatewayError";
  gatewayMessage;
  constructor(status, gatewayMessage, body) {
    super(`${status} ${gatewayMessage} (API Gateway)`, status, body);
    this.gatewayMessage = gatewayMessage;
  }
};
function isMatchmakingError(e, code) {
  return e instanceof MatchmakingError && (code === void 0 || e.code === code);
}
function errorOf(status, body) {
  if (status >= 200 && status < 300) return null;
  if (isObject(body)) {
    const data = body["data"];
    if (typeof body["msg"] === "string" && isObject(data) && typeof data["error"] === "string") {
      return new MatchmakingError(status, body["msg"], data, body);
    }
    if (typeof body["message"] === "string") return new GatewayError(status, body["message"], body);
  }
  return new ApiError(`${status}: unexpected answer ${JSON.stringify(body)}`, status, body);
}
function isObject(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// src/routes.ts
var ROUTES = {
  join: { method: "POST", path: "/v1/matching/join" },
  leave: { method: "POST", path: "/v1/matching/leave" },
  accept: { method: "POST", path: "/v1/matching/accept" },
  queueStatus: { method: "GET", path: "/v1/matching/queue-status/{worldType}" },
  myStatus: { method: "GET", path: "/v1/matching/my-status" },
  match: { method: "GET", path: "/v1/matching/matches/{matchId}" },
  assign: { method: "POST", path: "/v1/matching/matches/{matchId}/assignment", scope: "servers.scope" },
  report: { method: "POST", path: "/v1/matching/matches/{matchId}/result", scope: "servers.scope" },
  backfill: { method: "POST", path: "/v1/matching/matches/{matchId}/backfill", scope: "servers.scope" },
  cancelBackfill: { method: "DELETE", path: "/v1/matching/matches/{matchId}/backfill", scope: "servers.scope" },
  backfillKeepalive: { method: "POST", path: "/v1/matching/matches/{matchId}/backfill/keepalive", scope: "servers.scope" },
  rating: { method: "PUT", path: "/v1/ratings/{playerId}", scope: "ratings.writerScope" },
  attributes: { method: "PUT", path: "/v1/attributes/{playerId}", scope: "attributeStore.writerScope" },
  avoid: { method: "PUT", path: "/v1/avoid/{playerId}", scope: "servers.scope" },
  createParty: { method: "POST", path: "/v1/parties" },
  joinParty: { method: "POST", path: "/v1/parties/{partyId}/join" },
  cancelParty: { method: "DELETE", path: "/v1/parties/{partyId}" },
  adminTickets: { method: "GET", path: "/v1/admin/worlds/{worldType}/tickets", scope: "admin.readScope" },
  adminMatches: { method: "GET", path: "/v1/admin/worlds/{worldType}/matches", scope: "admin.readScope" },
  adminPlayer: { method: "GET", path: "/v1/admin/players/{playerId}", scope: "admin.readScope" },
  adminAudit: { method: "GET", path: "/v1/admin/audit", scope: "admin.readScope" },
  adminRemoveTicket: { method: "POST", path: "/v1/admin/worlds/{worldType}/tickets/{playerId}/remove", scope: "admin.actionScope" },
  adminCancelProposal: { method: "POST", path: "/v1/admin/proposals/{matchId}/cancel", scope: "admin.actionScope" },
  adminFinishMatch: { method: "POST", path: "/v1/admin/matches/{matchId}/finish", scope: "admin.actionScope" },
  adminVoidMatch: { method: "POST", path: "/v1/admin/matches/{matchId}/void", scope: "admin.actionScope" }
};
function fillPath(path, params) {
  return path.replace(/\{([^}]+)\}/g, (_, name) => {
    const value = params[name];
    if (value === void 0) throw new TypeError(`missing path parameter ${name} for ${path}`);
    return encodeURIComponent(value);
  });
}

// src/http.ts
var MatchmakingClient = class {
  httpUrl;
  #token;
  #fetch;
  constructor(options) {
    this.httpUrl = options.httpUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }
  /** Calls operation `op` of the spec; what the named methods below do. */
  async call(op, params = {}, body) {
    const route = ROUTES[op];
    const url = this.httpUrl + fillPath(route.path, params);
    for (let refresh = false; ; refresh = true) {
      const token = await resolveToken(this.#token, { refresh, httpUrl: this.httpUrl });
      const headers = { authorization: `Bearer ${token}` };
      if (body !== void 0) headers["content-type"] = "application/json";
      const init = { method: route.method, headers };
      if (body !== void 0) init.body = JSON.stringify(body);
      const res = await this.#fetch(url, init);
      const text = await res.text();
      let parsed = text;
      try {
        parsed = JSON.parse(text);
      } catch {
      }
      const error = errorOf(res.status, parsed);
      if (error === null) return parsed.data;
      const retry = error instanceof GatewayError && error.status === 401 && typeof this.#token === "function";
      if (!retry || refresh) throw error;
    }
  }
  /** `POST /v1/matching/join`: queued, matched at once, or (ready check) proposed. */
  join(body) {
    return this.call("join", {}, body);
  }
  /** `POST /v1/matching/leave`. */
  leave(body) {
    return this.call("leave", {}, body);
  }
  /** `POST /v1/matching/accept`: answer a ready check. */
  accept(body) {
    return this.call("accept", {}, body);
  }
  /** `GET /v1/matching/queue-status/{worldType}`. */
  queueStatus(worldType) {
    return this.call("queueStatus", { worldType });
  }
  /** `GET /v1/matching/my-status`: idle, in a party, queued, proposed or matched. */
  myStatus() {
    return this.call("myStatus");
  }
  /** `GET /v1/matching/matches/{matchId}`: one of the caller's matches with its lifecycle. */
  match(matchId) {
    return this.call("match", { matchId });
  }
  /** `POST /v1/parties`: create a party and invite its members. */
  createParty(body) {
    return this.call("createParty", {}, body);
  }
  /** `POST /v1/parties/{partyId}/join`: join a party the caller is invited to. */
  joinParty(partyId, body = {}) {
    return this.call("joinParty", { partyId }, body);
  }
  /** `DELETE /v1/parties/{partyId}`: cancel a party, or decline an invitation. */
  cancelParty(partyId) {
    return this.call("cancelParty", { partyId });
  }
  /** `PUT /v1/ratings/{playerId}`: a trusted rating write (a token with `ratings.writerScope`). */
  putRating(playerId, body) {
    return this.call("rating", { playerId }, body);
  }
  /**
   * `PUT /v1/attributes/{playerId}`: replaces a player's trusted attributes (those the rule set declares
   * `"source": "trusted"`; `{attributes: {}}` clears them), a token with `attributeStore.writerScope`.
   */
  putAttributes(playerId, body) {
    return this.call("attributes", { playerId }, body);
  }
  /**
   * `PUT /v1/avoid/{playerId}`: replaces a player's avoid list (block lists; `{players: []}` clears it): the player and
   * every listed player are never matched or backfilled together. A token with `servers.scope`.
   */
  putAvoidList(playerId, body) {
    return this.call("avoid", { playerId }, body);
  }
  /** `POST /v1/matching/matches/{matchId}/assignment`: the allocator names the match's server (a token with `servers.scope`). */
  assignMatch(matchId, body) {
    return this.call("assign", { matchId }, body);
  }
  /** `POST /v1/matching/matches/{matchId}/result`: the game server reports how the match ended (a token with `servers.scope`). */
  reportResult(matchId, body) {
    return this.call("report", { matchId }, body);
  }
  /**
   * `POST /v1/matching/matches/{matchId}/backfill`: a running match asks for players with the players it has now per
   * team (a token with `servers.scope`); replaces its open backfill. Renew it with {@link renewBackfill}.
   */
  requestBackfill(matchId, body) {
    return this.call("backfill", { matchId }, body);
  }
  /** `POST /v1/matching/matches/{matchId}/backfill/keepalive`: keeps the match's backfill open (a token with `servers.scope`). */
  renewBackfill(matchId) {
    return this.call("backfillKeepalive", { matchId });
  }
  /** `DELETE /v1/matching/matches/{matchId}/backfill`: ends the match's open backfill (a token with `servers.scope`). */
  cancelBackfill(matchId) {
    return this.call("cancelBackfill", { matchId });
  }
};

// src/matchmaking.ts
var Matchmaking = class extends MatchmakingClient {
  socket;
  constructor(options) {
    super(options);
    const { token } = options;
    this.socket = new Connection({
      ...options,
      token: typeof token === "string" ? token : (request) => token({ ...request, httpUrl: this.httpUrl })
    });
  }
  on(type, listener) {
    return this.socket.on(type, listener);
  }
  once(type, listener) {
    return this.socket.once(type, listener);
  }
  waitFor(type, matches, timeoutMs) {
    return this.socket.waitFor(type, matches, timeoutMs);
  }
  /** Opens the WebSocket (connect before joining: pushes go to open sockets). */
  connect() {
    return this.socket.connect();
  }
  /** Closes the WebSocket for good. */
  close() {
    this.socket.close();
  }
};

// src/types.ts
var SERVER_MESSAGE_TYPES = [
  "QUEUED",
  "MATCH_FOUND",
  "MATCH_ASSIGNED",
  "MATCH_RESULT",
  "TICKET_EXPIRED",
  "TICKET_REMOVED",
  "PARTY_UPDATE",
  "PARTY_CANCELLED",
  "MATCH_PROPOSED",
  "MATCH_ACCEPT_PROGRESS",
  "MATCH_CANCELLED",
  "PONG"
];

// src/player-state.ts
var IDLE_PHASES = ["IDLE", "FINISHED", "EXPIRED", "REMOVED"];
var MATCHED_PHASES = ["MATCHED", "ASSIGNED", "FINISHED"];
var MATCH_ORDER = { FORMED: 0, ASSIGNED: 1, FINISHED: 2 };
var PHASE_OF = { FORMED: "MATCHED", ASSIGNED: "ASSIGNED", FINISHED: "FINISHED" };
function initialState(playerId) {
  return { playerId, version: 0, phase: "IDLE", queue: null, party: null, proposal: null, matchId: null, matches: [], note: null, error: null };
}
function isIdle(phase) {
  return IDLE_PHASES.includes(phase);
}
function matchOf(state, matchId) {
  return state.matches.find((m) => m.matchId === matchId);
}
function reduce(state, event) {
  let next;
  switch (event.type) {
    case "status":
      if (event.sentAt < state.version) return mergeStale(state, event.data);
      next = fromStatus(state, event.data);
      break;
    case "push":
      next = fromPush(state, event.message);
      break;
    case "answer":
      next = fromAnswer(state, event);
      break;
    case "failed":
      next = fromFailure(state, event);
      return { ...next, version: state.version + 1, error: { code: event.code, message: event.message } };
  }
  if (next === state) return state;
  const moved = next.phase !== state.phase || next.matchId !== state.matchId || matchOf(next, next.matchId)?.state !== matchOf(state, state.matchId)?.state;
  return { ...next, version: state.version + 1, error: moved ? null : next.error };
}
function mergeStale(state, data) {
  if (data.status !== "MATCHED" || !matchOf(state, data.match.matchId)) return state;
  const matches = upsert(state.matches, cardOf(data.match, data.match.state, state.playerId));
  const headline = data.match.matchId === state.matchId && MATCHED_PHASES.includes(state.phase);
  const phase = headline ? PHASE_OF[matches.find((m) => m.matchId === state.matchId).state] : state.phase;
  return { ...state, matches, phase };
}
function fromStatus(state, data) {
  switch (data.status) {
    case "IDLE": {
      const party = state.party && !joined(state.party, state.playerId) ? state.party : null;
      if (isIdle(state.phase) && party === state.party) return state;
      if (isIdle(state.phase)) return { ...state, party };
      return { ...state, phase: "IDLE", queue: null, proposal: null, party, note: null };
    }
    case "PARTY":
      return { ...state, phase: "PARTY", party: data.party, queue: null, proposal: null, note: null };
    case "QUEUED": {
      const { status: _s, party, ...place } = data;
      const same = sameQueue(state.queue, place);
      if (state.phase === "QUEUED" && same && (party ?? null) === state.party) return state;
      return { ...state, phase: "QUEUED", queue: { ...place }, party: party ?? keepInvitation(state), proposal: null };
    }
    case "PROPOSED": {
      const p = data.proposal;
      const proposal = {
        matchId: p.matchId,
        worldType: p.worldType,
        acceptBy: p.acceptBy,
        participants: p.participants,
        accepted: Math.max(p.accepted.length, state.proposal?.matchId === p.matchId ? state.proposal.accepted : 0),
        answered: p.accepted.includes(state.playerId)
      };
      if (state.phase === "PROPOSED" && state.proposal && sameJson(state.proposal, proposal)) return state;
      return { ...state, phase: "PROPOSED", proposal, queue: null };
    }
    case "MATCHED": {
      const card = cardOf(data.match, data.match.state ?? "FORMED", state.playerId);
      const merged = withMatch(state, card, true);
      return sameJson(merged, state) ? state : merged;
    }
  }
  return state;
}
function fromPush(state, msg) {
  switch (msg.type) {
    case "QUEUED": {
      const { type: _t, ...place } = msg;
      const before = state.queue?.worldType === place.worldType ? state.queue : null;
      return { ...state, phase: "QUEUED", queue: { ...before, ...place }, proposal: null, note: null };
    }
    case "MATCH_FOUND": {
      const card = cardOf(msg, "FORMED", state.playerId);
      if (msg.backfill) card.backfill = true;
      return withMatch(state, card, true);
    }
    case "MATCH_ASSIGNED":
      return withMatch(state, { ...cardOf(msg, "ASSIGNED", state.playerId), assignment: msg.assignment }, true);
    case "MATCH_RESULT": {
      const card = matchOf(state, msg.matchId) ?? { matchId: msg.matchId, worldType: msg.worldType, participants: [], state: "FINISHED" };
      const done = { ...card, state: "FINISHED", result: msg.result };
      if (msg.rating) done.rating = msg.rating;
      const about = state.matchId === msg.matchId ? MATCHED_PHASES.includes(state.phase) : state.phase === "IDLE";
      return withMatch(state, done, about);
    }
    case "TICKET_EXPIRED":
    case "TICKET_REMOVED": {
      if (state.phase !== "QUEUED" || state.queue?.worldType !== msg.worldType) return state;
      const phase = msg.type === "TICKET_EXPIRED" ? "EXPIRED" : "REMOVED";
      return { ...state, phase, queue: null, party: null, note: null };
    }
    case "PARTY_UPDATE": {
      const party = msg.party;
      const mine = joined(party, state.playerId);
      if (mine && party.state === "ASSEMBLING" && (isIdle(state.phase) || state.phase === "PARTY")) {
        return { ...state, party, phase: "PARTY", note: null };
      }
      if (mine && party.state === "QUEUED" && (isIdle(state.phase) || state.phase === "PARTY")) {
        const queue = { worldType: party.worldType, position: null, queueSize: null, estimatedWaitSeconds: null };
        return { ...state, party, phase: "QUEUED", queue, note: null };
      }
      return { ...state, party };
    }
    case "PARTY_CANCELLED": {
      if (state.party && state.party.partyId !== msg.partyId) return state;
      const note = `party ${msg.partyId} was cancelled: ${words(msg.reason)}${msg.by ? ` (${msg.by})` : ""}`;
      const inIt = state.phase === "PARTY" || state.phase === "QUEUED" && state.party !== null;
      return { ...state, party: null, note, ...inIt ? { phase: "IDLE", queue: null } : {} };
    }
    case "MATCH_PROPOSED": {
      const proposal = {
        matchId: msg.matchId,
        worldType: msg.worldType,
        acceptBy: msg.acceptBy,
        participants: msg.participants,
        accepted: 0,
        answered: false
      };
      if (msg.backfillOf) proposal.backfillOf = msg.backfillOf;
      return { ...state, phase: "PROPOSED", proposal, queue: null, note: null };
    }
    case "MATCH_ACCEPT_PROGRESS": {
      const p = state.proposal;
      if (!p || p.matchId !== msg.matchId || msg.accepted <= p.accepted) return state;
      return { ...state, proposal: { ...p, accepted: msg.accepted } };
    }
    case "MATCH_CANCELLED": {
      if (state.phase !== "PROPOSED" && state.proposal?.matchId !== msg.matchId) return state;
      return cancelled(state, msg.matchId, msg.worldType, msg.reason, msg.requeued);
    }
    default:
      return state;
  }
}
function fromAnswer(state, event) {
  const data = event.data;
  switch (event.op) {
    case "join":
    case "createParty":
    case "joinParty":
      return data.status ? fromStatus(state, data) : state;
    case "leave": {
      const note = `you left the queue in ${String(data["worldType"] ?? state.queue?.worldType)}`;
      return { ...state, phase: "IDLE", queue: null, party: null, note };
    }
    case "accept":
      if (data.status === "ACCEPTED" && state.proposal && state.proposal.matchId === data["matchId"]) {
        const p = state.proposal;
        return { ...state, proposal: { ...p, accepted: Math.max(Number(data["accepted"]), p.accepted), answered: true } };
      }
      if (data.status === "CANCELLED") {
        return cancelled(state, String(data["matchId"]), String(data["worldType"]), "DECLINED", false, true);
      }
      return data.status === "MATCHED" ? fromStatus(state, data) : state;
    case "cancelParty":
      return { ...state, party: null, note: "you left the party", ...isIdle(state.phase) ? {} : { phase: "IDLE", queue: null } };
  }
  return state;
}
function fromFailure(state, event) {
  const data = event.data ?? {};
  if (event.code === "IN_MATCH" && typeof data["matchId"] === "string") {
    const old = matchOf(state, data["matchId"]);
    const assignment = data["assignment"];
    const card = old ?? { matchId: data["matchId"], worldType: "", participants: [state.playerId], state: "FORMED" };
    return withMatch(state, assignment ? { ...card, state: later(card.state, "ASSIGNED"), assignment } : card, true);
  }
  if (event.code === "ALREADY_QUEUED" && typeof data["worldType"] === "string") {
    const { error: _e, party, ...place } = data;
    return { ...state, phase: "QUEUED", queue: place, party: party ?? state.party };
  }
  return state;
}
function cancelled(state, matchId, worldType, reason, requeued, self = false) {
  const why = self ? "you declined" : words(reason);
  const note = `match ${matchId} was cancelled (${why}); ` + (requeued ? "you are back in the queue at your place" : "you left the queue");
  const queue = requeued ? { worldType, position: null, queueSize: null, estimatedWaitSeconds: null } : null;
  return { ...state, phase: requeued ? "QUEUED" : "IDLE", proposal: null, queue, note };
}
function withMatch(state, card, focus) {
  const matches = upsert(state.matches, card);
  if (!focus) return { ...state, matches };
  const merged = matches.find((m) => m.matchId === card.matchId);
  const current = matchOf(state, state.matchId);
  if (current && current.matchId !== card.matchId && index(state, current.matchId) < index(state, card.matchId)) {
    return { ...state, matches };
  }
  const fresh = state.matchId !== card.matchId;
  return {
    ...state,
    matches,
    matchId: card.matchId,
    phase: PHASE_OF[merged.state],
    queue: null,
    proposal: null,
    party: fresh && state.party && joined(state.party, state.playerId) ? null : state.party,
    note: fresh ? null : state.note
  };
}
function upsert(matches, card) {
  const i = matches.findIndex((m) => m.matchId === card.matchId);
  if (i < 0) return [card, ...matches];
  const old = matches[i];
  const forward = MATCH_ORDER[card.state] >= MATCH_ORDER[old.state];
  const merged = forward ? { ...old, ...defined(card) } : { ...defined(card), ...old };
  merged.state = later(old.state, card.state);
  merged.participants = [...old.participants, ...card.participants.filter((p) => !old.participants.includes(p))];
  if (old.backfill || card.backfill) merged.backfill = true;
  return matches.map((m, j) => j === i ? merged : m);
}
function cardOf(m, state, me) {
  const card = { matchId: m.matchId, worldType: m.worldType, participants: [...m.participants], state };
  for (const key of ["teams", "ratings", "spread", "teamDifference", "region", "worstLatency", "rules", "assignment", "result"]) {
    if (m[key] !== void 0) card[key] = m[key];
  }
  const changes = m["ratingChanges"];
  const mine = changes?.[me];
  if (mine) card.rating = mine;
  return card;
}
function later(a, b) {
  return MATCH_ORDER[a] >= MATCH_ORDER[b] ? a : b;
}
function index(state, matchId) {
  return state.matches.findIndex((m) => m.matchId === matchId);
}
function joined(party, me) {
  return party.members.some((m) => m.playerId === me && m.joined);
}
function keepInvitation(state) {
  return state.party && !joined(state.party, state.playerId) ? state.party : null;
}
function sameQueue(a, b) {
  return a !== null && sameJson(a, b);
}
function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
function defined(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== void 0));
}
function words(code) {
  return code.toLowerCase().replaceAll("_", " ");
}
function controls(state, ctx) {
  const on = ctx.connected;
  const member = state.party !== null && joined(state.party, state.playerId);
  const invited = state.party !== null && !member && state.party.members.some((m) => m.playerId === state.playerId);
  const free = isIdle(state.phase) || state.phase === "MATCHED" && !ctx.gameServers;
  const proposed = state.phase === "PROPOSED" && state.proposal !== null;
  return {
    join: on && free && !member,
    leave: on && state.phase === "QUEUED",
    createParty: on && free && !member,
    joinParty: on && free && invited,
    leaveParty: on && (member || invited) && (free || state.phase === "PARTY" || state.phase === "QUEUED"),
    accept: on && proposed && !state.proposal.answered,
    decline: on && proposed,
    changeWorld: free && !member
  };
}

// src/words.ts
function describeMessage(msg, me) {
  const others = (players) => players.filter((p) => p !== me).join(", ") || "nobody else";
  switch (msg.type) {
    case "TEXT":
      return `the heartbeat was not recorded (${msg.data}); the next one retries`;
    case "PONG":
      return msg.registered ? `heartbeat answered: keep sending one every ${msg.heartbeatSeconds} s (presence lapses after ${msg.presenceTimeoutSeconds} s)` : "heartbeat answered, but the registration had lapsed: the server closes this socket and the client reconnects";
    case "QUEUED":
      return `queued in ${msg.worldType} at position ${msg.position} of ${msg.queueSize}` + wait(msg.estimatedWaitSeconds);
    case "MATCH_FOUND":
      return msg.backfill ? `seated in the running match ${msg.matchId} in ${msg.worldType} (backfill) with ${others(msg.participants)}` : `match ${msg.matchId} found in ${msg.worldType} with ${others(msg.participants)}`;
    case "MATCH_ASSIGNED":
      return `match ${msg.matchId} has a server: connect to ${msg.assignment.connection}` + (msg.assignment.token ? " with your seat token" : "");
    case "MATCH_RESULT":
      return `match ${msg.matchId} finished: ${describeResult(msg.result, me)}` + (msg.rating ? `; ${describeRating(msg.rating)}` : "");
    case "TICKET_EXPIRED":
      return `your ticket in ${msg.worldType} waited too long and expired; join again`;
    case "TICKET_REMOVED":
      return msg.reason === "OPERATOR" ? `an operator removed your ticket in ${msg.worldType}; join again` : `your ticket in ${msg.worldType} was removed: ${msg.worldType} needs a live connection and you had none; join again`;
    case "PARTY_UPDATE": {
      const p = msg.party;
      const who = p.members.map((m) => `${m.playerId}${m.joined ? " \u2713" : " (invited)"}`).join(", ");
      const state = p.state === "ASSEMBLING" ? "assembling" : p.state === "QUEUED" ? "queued" : "in a ready check";
      return `party ${p.partyId} of ${p.leader} in ${p.worldType} is ${state}: ${who}`;
    }
    case "PARTY_CANCELLED":
      return `party ${msg.partyId} was cancelled: ${PARTY_REASONS[msg.reason] ?? msg.reason.toLowerCase()}` + (msg.by ? ` (${msg.by})` : "");
    case "MATCH_PROPOSED":
      return `ready check for ${msg.backfillOf ? `open seats in match ${msg.backfillOf}` : `match ${msg.matchId}`} in ${msg.worldType} with ${others(msg.participants)}: accept within ${Math.max(0, Math.round((msg.acceptBy - Date.now()) / 1e3))} s`;
    case "MATCH_ACCEPT_PROGRESS":
      return `${msg.accepted} of ${msg.total} accepted match ${msg.matchId}; waiting for the others`;
    case "MATCH_CANCELLED":
      return `match ${msg.matchId} was cancelled (${CANCEL_REASONS[msg.reason] ?? msg.reason.toLowerCase()}); ` + (msg.requeued ? "you are back in the queue at your place" : "you are no longer queued");
    default:
      return `a ${msg.type} message`;
  }
}
var PARTY_REASONS = {
  LEFT: "a member left",
  DECLINED: "an invited player declined",
  DISCONNECTED: "a member lost their connection",
  EXPIRED: "not everyone joined in time"
};
var CANCEL_REASONS = {
  DECLINED: "declined",
  LEFT: "a player left the queue",
  TIMEOUT: "not everyone accepted in time",
  OPERATOR: "an operator cancelled it"
};
function describeResult(result, me) {
  if (result.cancelled) return "cancelled, no winner";
  if (result.playerRanks) {
    const mine = me !== void 0 ? result.playerRanks[me] : void 0;
    if (mine !== void 0) return `you placed ${ordinal(mine)} of ${Object.keys(result.playerRanks).length}`;
    return Object.entries(result.playerRanks).map(([p, r]) => `${p} ${ordinal(r)}`).join(", ");
  }
  if (result.teamRanks) return result.teamRanks.map((r, i) => `team ${i + 1} ${ordinal(r)}`).join(", ");
  return "no placings";
}
function describeRating(change) {
  return `your rating ${Math.round(change.before)} \u2192 ${Math.round(change.after)}`;
}
function describeState(state) {
  const parts = [];
  const match = matchOf(state, state.matchId);
  switch (state.phase) {
    case "QUEUED": {
      const q = state.queue;
      if (!q) break;
      if (q.position === null) parts.push(`${q.worldType}: waiting for your place\u2026`);
      else parts.push(`${q.worldType}: position ${q.position} of ${q.queueSize}` + wait(q.estimatedWaitSeconds));
      if (q.rating !== void 0) {
        const window = q.ratingWindow == null ? "any rating (relaxed)" : `\xB1${Math.round(q.ratingWindow)}`;
        parts.push(`rating ${q.rating}, window ${window}` + (q.ratingWindow != null ? `, relaxes in ${q.relaxesInSeconds} s` : ""));
      }
      if (state.party) parts.push(`with your party ${state.party.partyId}`);
      break;
    }
    case "PARTY":
      parts.push(`waiting for the party to assemble`);
      break;
    case "PROPOSED":
      if (state.proposal) parts.push(`match ${state.proposal.matchId} awaits everyone's answer (${state.proposal.accepted} of ${state.proposal.participants.length} accepted)`);
      break;
    case "MATCHED":
      if (match) parts.push(`match ${match.matchId}: waiting for a game server`);
      if (match?.rules) parts.push(...sharedValues(match.rules));
      break;
    case "ASSIGNED":
      if (match?.assignment) parts.push(`match ${match.matchId}: connect to ${match.assignment.connection}`);
      else if (match) parts.push(`match ${match.matchId}: the game is on`);
      if (match?.rules) parts.push(...sharedValues(match.rules));
      break;
    case "FINISHED":
      if (match) {
        parts.push(`match ${match.matchId} finished` + (match.result ? `: ${describeResult(match.result, state.playerId)}` : ""));
        if (match.rating) parts.push(describeRating(match.rating));
      }
      break;
    case "EXPIRED":
      parts.push("your ticket waited too long and expired; join again");
      break;
    case "REMOVED":
      parts.push("your ticket was removed: the world needs a live connection; join again");
      break;
    case "IDLE":
      break;
  }
  if (state.note) parts.push(state.note);
  return parts.join(" \xB7 ");
}
function sharedValues(rules) {
  return rules.filter((r) => r.inForce && r.shared?.length).map((r) => `${r.name}: ${r.shared.join(", ")}`);
}
function wait(seconds) {
  return seconds == null ? " \xB7 estimated wait unknown" : ` \xB7 estimated wait ${seconds} s`;
}
function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] ?? "th";
  return `${n}${s}`;
}
export {
  ApiError,
  Connection,
  Deduper,
  Emitter,
  GatewayError,
  IDLE_PHASES,
  Matchmaking,
  MatchmakingClient,
  MatchmakingError,
  ROUTES,
  SERVER_MESSAGE_TYPES,
  controls,
  defaultWebSocket,
  describeMessage,
  describeRating,
  describeResult,
  describeState,
  devToken,
  errorOf,
  initialState,
  isIdle,
  isMatchmakingError,
  matchOf,
  reduce
};
