// The whole flow through the SDK against a real local stack: two parties of
// two queue in a rated 2 x 2 world with a ready check, everyone accepts,
// MATCH_FOUND; a game server (a token with the configured servers.scope)
// assigns the match a server (MATCH_ASSIGNED, each player with their own
// token), a reconnect brings a repeat of it that the SDK drops, and the
// result moves every rating (MATCH_RESULT with each player's change).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  Matchmaking,
  MatchmakingClient,
  isMatchmakingError,
  type ConnectionEvents,
  type MatchId,
  type ServerMessage,
} from "@matchmaking/client";
import { startStack, type Stack } from "./support/stack.js";

const SERVER_SCOPE = "matchmaking/server";
const WRITER_SCOPE = "matchmaking/ratings.write";
const RULES = {
  ratings: { claim: "mmr", default: 1500, min: 0, max: 5000, writerScope: WRITER_SCOPE },
  servers: { scope: SERVER_SCOPE },
  worlds: [
    {
      name: "squads",
      teamSize: 2,
      teams: 2,
      mode: "rating",
      rating: { baseWindow: 200, widenPerSecond: 10, maxWindow: 400, relaxAfterSeconds: 60 },
      readyCheck: { acceptSeconds: 30, declineCooldownSeconds: 5 },
    },
  ],
};
const WAIT = 15_000;
const PLAYERS = ["ann", "ben", "cat", "dan"] as const;
type Name = (typeof PLAYERS)[number];

let stack: Stack;
const mm = {} as Record<Name, Matchmaking>;
/** Every event each player's connection emitted, in order. */
const heard = {} as Record<Name, { type: string; msg: ServerMessage }[]>;

before(async () => {
  // The server here is the test's own: no demo allocator assigning first.
  stack = await startStack({ MM_RULES: JSON.stringify(RULES), MM_DEMO_ALLOCATOR: "false" });
  for (const name of PLAYERS) {
    mm[name] = new Matchmaking({ httpUrl: stack.httpUrl, wsUrl: stack.wsUrl, token: stack.tokenSource(name) });
    heard[name] = [];
    mm[name].on("message", (msg) => heard[name].push({ type: "message", msg }));
    mm[name].on("duplicate", (msg) => heard[name].push({ type: "duplicate", msg }));
  }
  await Promise.all(PLAYERS.map((name) => mm[name].connect()));
});

after(async () => {
  for (const name of PLAYERS) mm[name]?.close();
  await stack?.stop();
});

function delivered(name: Name, type: ServerMessage["type"], matchId?: MatchId): ServerMessage[] {
  return heard[name]
    .filter((h) => h.type === "message" && h.msg.type === type)
    .map((h) => h.msg)
    .filter((m) => matchId === undefined || ("matchId" in m && m.matchId === matchId));
}

/** The event already heard, or the next one: no race with a push that came first. */
function next<K extends ServerMessage["type"]>(
  name: Name,
  type: K,
  matches: (m: ConnectionEvents[K]) => boolean = () => true,
): Promise<ConnectionEvents[K]> {
  const seen = delivered(name, type).find((m) => matches(m as ConnectionEvents[K]));
  if (seen) return Promise.resolve(seen as ConnectionEvents[K]);
  return mm[name].waitFor(type, matches, WAIT);
}

test("two parties, a ready check, a match, its server and its result", async () => {
  // Trusted ratings first (a token with the writer scope); a player may not.
  const writer = new MatchmakingClient({
    httpUrl: stack.httpUrl,
    token: await stack.token("rating-service", { scp: [WRITER_SCOPE] }),
  });
  for (const [i, name] of PLAYERS.entries()) {
    const stored = await writer.putRating(name, { rating: 1500 + 10 * i, worldType: "squads" });
    assert.equal(stored.rating, 1500 + 10 * i);
  }
  await assert.rejects(mm.ann.putRating("ann", { rating: 5000 }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "FORBIDDEN"), String(e));
    assert.equal(e.status, 403);
    assert.equal(e.data.required, WRITER_SCOPE);
    return true;
  });

  // ann invites ben; ben hears the invitation and joins: the party queues.
  const created = await mm.ann.createParty({ worldType: "squads", members: ["ben"] });
  assert.equal(created.status, "PARTY");
  const partyId = created.party.partyId;
  const invitation = await next("ben", "PARTY_UPDATE", (m) => m.party.partyId === partyId);
  assert.deepEqual(
    invitation.party.members.map((m) => [m.playerId, m.joined]),
    [["ann", true], ["ben", false]],
  );
  const queued = await mm.ben.joinParty(partyId);
  assert.equal(queued.status, "QUEUED", JSON.stringify(queued));
  await next("ann", "PARTY_UPDATE", (m) => m.party.partyId === partyId && m.party.state === "QUEUED");

  // cat and dan make the second party, which completes a match: a proposal.
  const second = await mm.cat.createParty({ worldType: "squads", members: ["dan"] });
  assert.equal(second.status, "PARTY");
  const secondId = second.party.partyId;
  await next("dan", "PARTY_UPDATE", (m) => m.party.partyId === secondId);
  const proposed = await mm.dan.joinParty(secondId);
  assert.equal(proposed.status, "PROPOSED", JSON.stringify(proposed));
  const matchId = proposed.proposal.matchId;
  for (const name of PLAYERS) {
    const asked = await next(name, "MATCH_PROPOSED", (m) => m.matchId === matchId);
    assert.deepEqual([...asked.participants].sort(), [...PLAYERS]);
    assert.ok(asked.acceptBy > Date.now() - 60_000);
  }

  // Everyone accepts: progress for the first three, MATCHED for the last.
  for (const [i, name] of PLAYERS.entries()) {
    const answer = await mm[name].accept({ matchId, accept: true });
    if (i < PLAYERS.length - 1) {
      assert.equal(answer.status, "ACCEPTED");
      assert.equal(answer.status === "ACCEPTED" && answer.accepted, i + 1);
      for (const other of PLAYERS) {
        await next(other, "MATCH_ACCEPT_PROGRESS", (m) => m.matchId === matchId && m.accepted === i + 1);
      }
    } else {
      assert.equal(answer.status, "MATCHED", JSON.stringify(answer));
    }
  }
  for (const name of PLAYERS) {
    const found = await next(name, "MATCH_FOUND", (m) => m.matchId === matchId);
    assert.equal(found.worldType, "squads");
    const teams = (found.teams ?? []).map((t) => [...t].sort().join("+")).sort();
    assert.deepEqual(teams, ["ann+ben", "cat+dan"], "each party in one team");
    assert.ok(found.ratings && found.ratings["dan"] === 1530, JSON.stringify(found.ratings));
  }
  const status = await mm.ann.myStatus();
  assert.equal(status.status, "MATCHED");
  assert.equal(status.status === "MATCHED" && status.match.state, "FORMED");

  // The allocator: a player's token may not assign; the server's may, once.
  const server = new MatchmakingClient({
    httpUrl: stack.httpUrl,
    token: await stack.token("allocator", { scp: [SERVER_SCOPE] }),
  });
  const assignment = {
    connection: "203.0.113.7:7777",
    properties: { map: "harbor" },
    players: Object.fromEntries(PLAYERS.map((p) => [p, { token: `seat-${p}` }])),
  };
  await assert.rejects(mm.ann.assignMatch(matchId, assignment), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "FORBIDDEN") && e.data.required === SERVER_SCOPE, String(e));
    return true;
  });
  const assigned = await server.assignMatch(matchId, assignment);
  assert.equal(assigned.state, "ASSIGNED");
  assert.equal(assigned.changed, true);
  assert.equal((await server.assignMatch(matchId, assignment)).changed, false, "the same assignment again");
  await assert.rejects(server.assignMatch(matchId, { connection: "198.51.100.1:1" }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "ASSIGNMENT_CONFLICT"), String(e));
    assert.equal(e.status, 409);
    assert.equal(e.data.state, "ASSIGNED");
    return true;
  });
  for (const name of PLAYERS) {
    const seat = await next(name, "MATCH_ASSIGNED", (m) => m.matchId === matchId);
    assert.deepEqual(seat.assignment, { connection: "203.0.113.7:7777", properties: { map: "harbor" }, token: `seat-${name}` });
  }
  // While the game is on, a player may not queue (a typed 409 with the seat).
  await assert.rejects(mm.ann.join({ worldType: "squads" }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "IN_MATCH"), String(e));
    assert.equal(e.data.matchId, matchId);
    return true;
  });

  // A socket that opens while the game is on is told again (at least once):
  // the SDK drops the repeat, so MATCH_ASSIGNED is delivered once.
  const repeat = mm.ann.waitFor("duplicate", (m) => m.type === "MATCH_ASSIGNED", WAIT);
  const reopened = mm.ann.waitFor("open", (e) => e.reconnected, WAIT);
  mm.ann.socket.reconnect();
  await reopened;
  const copy = await repeat;
  assert.equal(copy.type === "MATCH_ASSIGNED" && copy.matchId, matchId);

  // The result: ann and ben's team wins; every rating moves.
  const reported = await server.reportResult(matchId, { teamRanks: rankFor(assigned.match.teams ?? []) });
  assert.equal(reported.state, "FINISHED");
  for (const name of PLAYERS) {
    const result = await next(name, "MATCH_RESULT", (m) => m.matchId === matchId);
    const change = result.rating;
    assert.ok(change, `${name} hears their own rating change`);
    const won = name === "ann" || name === "ben";
    assert.ok(won ? change.after > change.before : change.after < change.before, `${name}: ${JSON.stringify(change)}`);
    assert.equal(change.games, 1);
  }
  const finished = await mm.ann.myStatus();
  assert.ok(finished.status === "MATCHED" && finished.match.state === "FINISHED", JSON.stringify(finished));
  assert.deepEqual(finished.match.result, { teamRanks: rankFor(assigned.match.teams ?? []) });
  assert.equal((await mm.ann.join({ worldType: "squads" })).status, "QUEUED", "a finished match frees its players");
  await mm.ann.leave({ worldType: "squads" });

  // Each message was delivered once per player, whatever the outbox repeated.
  for (const name of PLAYERS) {
    for (const type of ["MATCH_PROPOSED", "MATCH_FOUND", "MATCH_ASSIGNED", "MATCH_RESULT"] as const) {
      assert.equal(delivered(name, type, matchId).length, 1, `${name}: one ${type}`);
    }
  }
});

/** teamRanks putting the team with ann first. */
function rankFor(teams: string[][]): number[] {
  return teams.map((t) => (t.includes("ann") ? 1 : 2));
}
