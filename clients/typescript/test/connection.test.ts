// The connection object against a real local stack: heartbeats at the
// interval the server's PONG names (keeping a presence-only world's ticket
// past the presence timeout), reconnects with exponential backoff while the
// stack is down and a fresh token once it is back, and typed errors.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  Connection,
  GatewayError,
  isMatchmakingError,
  Matchmaking,
  MatchmakingClient,
  type ConnectionEvents,
} from "@matchmaking/client";
import { startStack } from "./support/stack.js";

const WAIT = 15_000;

test("heartbeats follow the PONG's heartbeatSeconds and keep the player present", async (t) => {
  const rules = { worlds: [{ name: "live", teamSize: 2, requirePresence: true }] };
  const stack = await startStack({
    MM_RULES: JSON.stringify(rules),
    MM_HEARTBEAT_SECS: "1",
    MM_PRESENCE_TIMEOUT_SECS: "3",
  });
  const mm = new Matchmaking({ httpUrl: stack.httpUrl, wsUrl: stack.wsUrl, token: stack.tokenSource("hana") });
  t.after(async () => {
    mm.close();
    await stack.stop();
  });
  const pongs: { at: number; msg: ConnectionEvents["PONG"] }[] = [];
  mm.on("PONG", (msg) => pongs.push({ at: Date.now(), msg }));
  assert.equal(mm.socket.heartbeatSeconds, 60, "the default until the server says");
  await mm.connect();
  // A heartbeat at once on open, then one per second: five PONGs in ~4 s,
  // well past the 3 s presence timeout, all still registered.
  await mm.waitFor("PONG", () => pongs.length >= 6, WAIT);
  assert.equal(mm.socket.heartbeatSeconds, 1);
  assert.ok(pongs.every((p) => p.msg.registered && p.msg.heartbeatSeconds === 1 && p.msg.presenceTimeoutSeconds === 3));
  const gaps = pongs.slice(2).map((p, i) => p.at - pongs[i + 1]!.at);
  // ~1 s apart (the default would be 60 s); loose bounds for a loaded machine.
  for (const gap of gaps) assert.ok(gap > 300 && gap < 3000, `heartbeat gaps of ~1 s: ${gaps.join(", ")}`);
  // Present: a world that requires presence takes the join.
  const joined = await mm.join({ worldType: "live" });
  assert.equal(joined.status, "QUEUED");
});

test("a socket the server drops reconnects with exponential backoff and a fresh token", async (t) => {
  let stack = await startStack({ MM_WORLDS: "world1:2" });
  const { httpAddr, wsAddr } = stack;
  // The token source mints at whatever stack is up on these ports; the
  // restarted stack has a new signing key, so the old token is refused.
  const minted: boolean[] = [];
  const source = stack.tokenSource("ivo");
  const conn = new Connection({
    wsUrl: stack.wsUrl,
    token: (request) => {
      minted.push(request.refresh);
      return typeof source === "string" ? source : source(request);
    },
    reconnect: { initialDelayMs: 100, factor: 2, maxDelayMs: 1_600, jitter: false },
  });
  t.after(async () => {
    conn.close();
    await stack.stop();
  });
  const delays: number[] = [];
  conn.on("reconnecting", (e) => delays.push(e.delayMs));
  await conn.connect();
  await conn.waitFor("PONG", (p) => p.registered, WAIT);

  const closed = conn.waitFor("close", () => true, WAIT);
  await stack.stop();
  const close = await closed;
  assert.equal(close.willReconnect, true);
  // While the stack is down every attempt fails, and the delay doubles.
  await conn.waitFor("reconnecting", (e) => e.attempt >= 4, WAIT);
  assert.deepEqual(delays.slice(0, 4), [100, 200, 400, 800]);
  assert.equal(conn.state, "reconnecting");

  stack = await startStack({ MM_WORLDS: "world1:2" }, { http: httpAddr, ws: wsAddr });
  const reopened = await conn.waitFor("open", () => true, WAIT);
  assert.equal(reopened.reconnected, true);
  await conn.waitFor("PONG", (p) => p.registered, WAIT);
  assert.ok(minted.includes(true), `a refreshed token after the refused ones: ${minted.join(",")}`);
  assert.ok(delays.every((d) => d <= 1_600), `capped at maxDelayMs: ${delays.join(",")}`);

  // And the player is reachable on the new socket: a match is pushed to it.
  const client = new MatchmakingClient({ httpUrl: stack.httpUrl, token: stack.tokenSource("ivo") });
  const other = new MatchmakingClient({ httpUrl: stack.httpUrl, token: stack.tokenSource("jon") });
  const found = conn.waitFor("MATCH_FOUND", () => true, WAIT);
  assert.equal((await client.join({ worldType: "world1" })).status, "QUEUED");
  assert.equal((await other.join({ worldType: "world1" })).status, "MATCHED");
  assert.deepEqual((await found).participants, ["ivo", "jon"]);
});

test("errors carry the documented envelope as typed errors", async (t) => {
  const stack = await startStack({ MM_WORLDS: "world1:2,world2:2" });
  t.after(() => stack.stop());
  const client = new MatchmakingClient({ httpUrl: stack.httpUrl, token: stack.tokenSource("kim") });

  await assert.rejects(client.join({ worldType: "world9" }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "UNKNOWN_WORLD"), String(e));
    assert.equal(e.status, 404);
    assert.deepEqual(e.data.worlds, ["world1", "world2"]);
    assert.match(e.msg, /world9/);
    return true;
  });
  await client.join({ worldType: "world1" });
  await assert.rejects(client.join({ worldType: "world2" }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "ALREADY_QUEUED"), String(e));
    assert.equal(e.status, 409);
    assert.equal(e.data.worldType, "world1");
    assert.equal("position" in e.data && e.data.position, 1);
    return true;
  });
  await assert.rejects(client.leave({ worldType: "world2" }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "NOT_QUEUED"), String(e));
    assert.equal(e.data.queuedIn, "world1");
    return true;
  });
  await assert.rejects(client.match("18f3a-1"), (e: unknown) => isMatchmakingError(e, "MATCH_NOT_FOUND"));
  await assert.rejects(client.joinParty("world1.18f3a-2b"), (e: unknown) => isMatchmakingError(e, "PARTY_NOT_FOUND"));
  // A malformed body is INVALID_REQUEST with the field at fault.
  await assert.rejects(
    client.call("join", {}, { worldType: "Bad World" }),
    (e: unknown) => isMatchmakingError(e, "INVALID_REQUEST") && e.data.field === "worldType",
  );
  // API Gateway's own 401 (a token the authorizer refuses) is not the envelope.
  const forged = new MatchmakingClient({ httpUrl: stack.httpUrl, token: "not-a-jwt" });
  await assert.rejects(forged.myStatus(), (e: unknown) => {
    assert.ok(e instanceof GatewayError, String(e));
    assert.equal(e.status, 401);
    assert.equal(e.gatewayMessage, "Unauthorized");
    return true;
  });
  // A refused WebSocket token: the connect keeps failing, no open.
  const refused = new Connection({ wsUrl: stack.wsUrl, token: "not-a-jwt", reconnect: { maxAttempts: 2, initialDelayMs: 50 } });
  await assert.rejects(refused.connect(), /not reconnecting/);
  assert.equal(refused.state, "closed");
});
