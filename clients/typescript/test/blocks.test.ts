// Block lists through the SDK against a real local stack: a game server
// (a token with servers.scope) stores a player's avoid list, and the two
// players then never meet in a match while a third one takes the seat;
// the write is refused without the scope, with an id twice or over
// maxEntries, and the player's own id is left out.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { MatchmakingClient, isMatchmakingError, type MatchRecord } from "@matchmaking/client";
import { startStack, type Stack } from "./support/stack.js";

const SERVER_SCOPE = "matchmaking/server";
const RULES = {
  servers: { scope: SERVER_SCOPE },
  blockLists: { maxEntries: 2 },
  worlds: [{ name: "duel", teamSize: 1, teams: 2 }],
};

let stack: Stack;
const client = (sub: string, claims?: Record<string, unknown>) =>
  new MatchmakingClient({ httpUrl: stack.httpUrl, token: stack.tokenSource(sub, claims) });

before(async () => {
  stack = await startStack({ MM_RULES: JSON.stringify(RULES), MM_DEMO_ALLOCATOR: "false" });
});

after(async () => {
  await stack?.stop();
});

test("an avoided player is never matched with the avoider; a third player takes the seat", async () => {
  const server = client("game-server", { scp: [SERVER_SCOPE] });
  const stored = await server.putAvoidList("ann", { players: ["bob"] });
  assert.deepEqual(stored, { playerId: "ann", players: ["bob"], previousPlayers: [] });

  assert.equal((await client("ann").join({ worldType: "duel" })).status, "QUEUED");
  assert.equal((await client("bob").join({ worldType: "duel" })).status, "QUEUED", "bob may not meet ann");
  const matched = await client("cat").join({ worldType: "duel" });
  assert.equal(matched.status, "MATCHED", JSON.stringify(matched));
  const match = (matched as { match: MatchRecord }).match;
  assert.deepEqual([...match.participants].sort(), ["ann", "cat"]);
  assert.equal((await client("bob").myStatus()).status, "QUEUED");

  const cleared = await server.putAvoidList("ann", { players: [] });
  assert.deepEqual(cleared.previousPlayers, ["bob"]);
});

test("an avoid list is refused without servers.scope, with an id twice or over maxEntries", async () => {
  await assert.rejects(client("dan").putAvoidList("dan", { players: ["eve"] }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "FORBIDDEN"), String(e));
    assert.equal(e.data.required, SERVER_SCOPE);
    return true;
  });
  const server = client("game-server", { scp: [SERVER_SCOPE] });
  for (const players of [["eve", "fay", "gus"], ["eve", "eve"]]) {
    await assert.rejects(server.putAvoidList("dan", { players }), (e: unknown) => {
      assert.ok(isMatchmakingError(e, "INVALID_REQUEST"), `${JSON.stringify(players)}: ${String(e)}`);
      assert.equal(e.status, 400);
      assert.equal(e.data.field, "players");
      return true;
    });
  }
  const kept = await server.putAvoidList("dan", { players: ["dan", "eve", "fay"] });
  assert.deepEqual(kept.previousPlayers, [], "the refused writes stored nothing");
  assert.deepEqual(kept.players, ["eve", "fay"], "the player's own id is left out");
});
