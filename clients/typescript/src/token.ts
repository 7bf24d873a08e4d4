/**
 * Where a token comes from: a fixed JWT, or a function asked for one before
 * each WebSocket (re)connect and each HTTP call. `refresh` is true when the
 * last one was refused (HTTP 401, or a connect that failed before opening):
 * a provider should then mint or fetch a new token instead of a cached one.
 */
export type TokenSource = string | ((request: TokenRequest) => string | Promise<string>);

export interface TokenRequest {
  /** The last token was refused: get a new one rather than a cached one. */
  refresh: boolean;
  /** The HTTP API's base URL, when the asker knows it ({@link Matchmaking} and {@link MatchmakingClient} do). */
  httpUrl?: string;
}

export async function resolveToken(source: TokenSource, request: TokenRequest): Promise<string> {
  return typeof source === "string" ? source : await source(request);
}

export interface DevTokenOptions {
  /** The local stack's HTTP address (default: the asking client's `httpUrl`, else `http://127.0.0.1:3000`). */
  httpUrl?: string;
  /** Extra claims, e.g. `{ mmr: 1700 }` or `{ scp: ["matchmaking/server"] }`. */
  claims?: Record<string, unknown>;
  fetch?: typeof fetch;
}

/**
 * A token source for the **local stack only** (`scripts/run-local.sh`): mints
 * development tokens for `sub` at its `POST /dev/token`, reusing one until a
 * minute before it expires or until it is refused. A deployed API has no such
 * route: use your identity provider's tokens there.
 */
export function devToken(sub: string, options: DevTokenOptions = {}): TokenSource {
  let cached: { token: string; until: number; base: string } | null = null;
  return async ({ refresh, httpUrl }) => {
    const base = (options.httpUrl ?? httpUrl ?? "http://127.0.0.1:3000").replace(/\/+$/, "");
    if (cached && !refresh && cached.base === base && Date.now() < cached.until) return cached.token;
    const doFetch = options.fetch ?? fetch;
    const res = await doFetch(`${base}/dev/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(options.claims ? { sub, claims: options.claims } : { sub }),
    });
    const body = (await res.json().catch(() => ({}))) as { token?: string; expiresIn?: number; message?: string };
    if (!res.ok || typeof body.token !== "string") {
      throw new Error(`POST ${base}/dev/token: ${res.status} ${body.message ?? "no token"}`);
    }
    cached = { token: body.token, until: Date.now() + Math.max(0, (body.expiresIn ?? 0) - 60) * 1000, base };
    return body.token;
  };
}
