// A real local stack (tools/local-stack's mm-local binary: HTTP API, WebSocket
// API, matcher and an embedded redis-server) on free loopback ports, started
// with the settings a test gives, as tools/local-stack/tests do in Rust.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { devToken, type TokenSource } from "@matchmaking/client";

export const REPO = fileURLToPath(new URL("../../../..", import.meta.url));

/** The mm-local binary: MM_LOCAL_BIN (scripts/test.mjs sets it, building it when unset). */
export function binary(): string {
  const bin = process.env["MM_LOCAL_BIN"];
  if (!bin) throw new Error("MM_LOCAL_BIN is not set: run the tests with `npm test` (scripts/test.mjs)");
  return bin;
}

export interface Stack {
  httpUrl: string;
  wsUrl: string;
  /** host:port of each API, to start another stack on the same ports. */
  httpAddr: string;
  wsAddr: string;
  /** A development token for `sub` (POST /dev/token), with extra claims. */
  token(sub: string, claims?: Record<string, unknown>): Promise<string>;
  /** A token source minting `sub`'s tokens at this stack. */
  tokenSource(sub: string, claims?: Record<string, unknown>): TokenSource;
  /** Everything the stack printed (for failure messages). */
  output(): string;
  /** SIGTERM, and wait for it (and its redis-server) to exit. */
  stop(): Promise<void>;
}

/** Settings no test inherits from the caller's environment. */
const CLEARED = ["MM_RULES", "MM_RULES_FILE", "MM_WORLDS", "REDIS_URL", "MM_HTTP_ADDR", "MM_WS_ADDR", "RUST_LOG"];

export async function startStack(
  settings: Record<string, string>,
  addrs: { http?: string; ws?: string } = {},
): Promise<Stack> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !CLEARED.includes(k)) env[k] = v;
  Object.assign(env, { MM_HTTP_ADDR: addrs.http ?? "127.0.0.1:0", MM_WS_ADDR: addrs.ws ?? "127.0.0.1:0" }, settings);
  const child = spawn(binary(), [], { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const urls = await new Promise<{ http: string; ws: string }>((resolve, reject) => {
    let http: string | undefined;
    const timer = setTimeout(() => reject(new Error(`mm-local did not start within 30 s:\n${log}`)), 30_000);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${binary()}: ${error.message}`));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`mm-local exited (${code}) before it was ready:\n${log}`));
    });
    createInterface({ input: child.stdout! }).on("line", (line) => {
      log += line + "\n";
      const page = /^\s+Demo page\s+(http:\/\/\S+?)\/?$/.exec(line);
      if (page) http = page[1];
      const ws = /^\s+WebSocket API\s+(ws:\/\/\S+?)\/?\?token=/.exec(line);
      if (ws && http) {
        clearTimeout(timer);
        resolve({ http, ws: ws[1]! });
      }
    });
  });
  return stackOf(child, urls, exited, () => log);
}

function stackOf(
  child: ChildProcess,
  urls: { http: string; ws: string },
  exited: Promise<void>,
  output: () => string,
): Stack {
  const httpUrl = urls.http;
  const token = async (sub: string, claims?: Record<string, unknown>) => {
    const res = await fetch(`${httpUrl}/dev/token`, {
      method: "POST",
      body: JSON.stringify(claims ? { sub, claims } : { sub }),
    });
    const body = (await res.json()) as { token: string };
    if (res.status !== 200) throw new Error(`POST /dev/token: ${res.status} ${JSON.stringify(body)}`);
    return body.token;
  };
  return {
    httpUrl,
    wsUrl: urls.ws,
    httpAddr: new URL(httpUrl).host,
    wsAddr: new URL(urls.ws).host,
    token,
    tokenSource: (sub, claims) => devToken(sub, claims ? { httpUrl, claims } : { httpUrl }),
    output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
