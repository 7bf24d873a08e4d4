// The at-least-once repeats the SDK drops, message by message.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Deduper, type ServerMessage } from "@matchmaking/client";

const found = (matchId: string): ServerMessage => ({
  type: "MATCH_FOUND",
  matchId,
  worldType: "w",
  participants: ["a", "b"],
  matchedAt: 1,
});
const party = (state: "ASSEMBLING" | "QUEUED", joined: boolean): ServerMessage => ({
  type: "PARTY_UPDATE",
  party: {
    partyId: "w.1-2",
    worldType: "w",
    leader: "a",
    state,
    expiresAt: 9,
    members: [
      { playerId: "a", joined: true },
      { playerId: "b", joined },
    ],
  },
});

test("matches are said once per id, proposals not after they are decided", () => {
  const d = new Deduper();
  assert.equal(d.accept(found("m1")), true);
  assert.equal(d.accept(found("m1")), false);
  assert.equal(d.accept(found("m2")), true);
  const progress = (accepted: number): ServerMessage => ({
    type: "MATCH_ACCEPT_PROGRESS",
    matchId: "p1",
    worldType: "w",
    accepted,
    total: 3,
  });
  assert.equal(d.accept({ type: "MATCH_PROPOSED", matchId: "p1", worldType: "w", acceptBy: 5, participants: ["a"] }), true);
  assert.equal(d.accept(progress(2)), true);
  assert.equal(d.accept(progress(1)), false, "an older progress retried late");
  assert.equal(d.accept(progress(2)), false);
  assert.equal(d.accept(found("p1")), true);
  assert.equal(d.accept(progress(3)), false, "nothing about a proposal after its MATCH_FOUND");
  assert.equal(d.accept({ type: "MATCH_PROPOSED", matchId: "p1", worldType: "w", acceptBy: 5, participants: ["a"] }), false);
});

test("party updates: the same update again is a repeat, a change is news", () => {
  const d = new Deduper();
  assert.equal(d.accept(party("ASSEMBLING", false)), true);
  assert.equal(d.accept(party("ASSEMBLING", false)), false);
  assert.equal(d.accept(party("QUEUED", true)), true);
  assert.equal(d.accept(party("ASSEMBLING", false)), true, "A, B, then A again is not a repeat of the latest");
  assert.equal(d.accept({ type: "PARTY_CANCELLED", partyId: "w.1-2", worldType: "w", reason: "LEFT", by: "a" }), true);
  assert.equal(d.accept({ type: "PARTY_CANCELLED", partyId: "w.1-2", worldType: "w", reason: "LEFT", by: "a" }), false);
  assert.equal(d.accept(party("QUEUED", true)), false, "nothing after the party is gone");
});

test("ticket expiry once per world until a new ticket, QUEUED and PONG never dropped", () => {
  const d = new Deduper({ windowMs: 1000 });
  const expired: ServerMessage = { type: "TICKET_EXPIRED", worldType: "w" };
  const queued: ServerMessage = { type: "QUEUED", worldType: "w", position: 1, queueSize: 1, estimatedWaitSeconds: null };
  assert.equal(d.accept(expired, 0), true);
  assert.equal(d.accept(expired, 10), false);
  assert.equal(d.accept(queued, 20), true);
  assert.equal(d.accept(queued, 21), true);
  assert.equal(d.accept(expired, 30), true, "a new ticket may expire too");
  assert.equal(d.accept(expired, 2000), true, "past the window");
  const pong: ServerMessage = { type: "PONG", registered: true, heartbeatSeconds: 60, presenceTimeoutSeconds: 150 };
  assert.equal(d.accept(pong), true);
  assert.equal(d.accept(pong), true);
});

test("memory is bounded: the oldest ids are forgotten", () => {
  const d = new Deduper({ maxKeys: 2 });
  d.accept(found("a"));
  d.accept(found("b"));
  d.accept(found("c"));
  assert.equal(d.accept(found("c")), false);
  assert.equal(d.accept(found("a")), true, "forgotten");
});
