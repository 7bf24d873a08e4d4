// The client-side state (src/player-state.ts) replayed through the orders
// of events that made the demo page contradict itself: a status poll sent
// before a push answering after it, a result followed by a stale MATCHED,
// a cancelled proposal followed by a bare IDLE, a proposal after a queue
// place. Pure: no stack needed.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import {
  controls,
  describeMessage,
  describeState,
  initialState,
  reduce,
  SERVER_MESSAGE_TYPES,
  type MyStatusResult,
  type PlayerEvent,
  type PlayerState,
  type ServerMessage,
} from "@matchmaking/client";
import { parse } from "yaml";
import { REPO } from "./support/stack.js";

const record = { matchId: "m1", worldType: "ranked", participants: ["ann", "ben", "cat"], matchedAt: 1 };
const seat = { connection: "127.0.0.1:7777", token: "t-ann" };
const push = (message: Record<string, unknown>): PlayerEvent => ({ type: "push", message: message as unknown as ServerMessage });
const status = (data: Record<string, unknown>, sentAt: number): PlayerEvent => ({
  type: "status",
  data: data as unknown as MyStatusResult,
  sentAt,
});
const run = (events: PlayerEvent[], from: PlayerState = initialState("ann")) => events.reduce(reduce, from);
const on = { connected: true, gameServers: true };

test("a match moves forward only: a poll's MATCHED/FORMED never takes back ASSIGNED or FINISHED", () => {
  let s = run([push({ type: "QUEUED", worldType: "ranked", position: 1, queueSize: 1, estimatedWaitSeconds: null })]);
  assert.equal(s.phase, "QUEUED");
  const before = s.version;
  s = run([push({ type: "MATCH_FOUND", ...record }), push({ type: "MATCH_ASSIGNED", ...record, assignment: seat })], s);
  assert.equal(s.phase, "ASSIGNED");
  // A poll sent after the pushes, answered from a read that still says FORMED.
  s = reduce(s, status({ status: "MATCHED", match: { ...record, state: "FORMED" } }, s.version));
  assert.equal(s.phase, "ASSIGNED", "the old page flipped to MATCHED here");
  assert.equal(s.matches[0]!.assignment?.connection, seat.connection, "the seat stays");
  // A poll sent before the pushes (sentAt older) changes no phase.
  s = reduce(s, status({ status: "QUEUED", worldType: "ranked", position: 1, queueSize: 1, estimatedWaitSeconds: null }, before));
  assert.equal(s.phase, "ASSIGNED");
  s = reduce(s, push({ type: "MATCH_RESULT", matchId: "m1", worldType: "ranked", result: { playerRanks: { ann: 1, ben: 2, cat: 3 } }, rating: { before: 1500, after: 1610.7, mean: 1610.7, games: 1 } }));
  assert.equal(s.phase, "FINISHED");
  s = reduce(s, status({ status: "MATCHED", match: { ...record, state: "ASSIGNED", assignment: seat } }, s.version));
  assert.equal(s.phase, "FINISHED", "the old page reverted FINISHED to MATCHED");
  s = reduce(s, status({ status: "IDLE" }, s.version));
  assert.equal(s.phase, "FINISHED", "an idle answer keeps the finished match on the headline");
  assert.match(describeState(s), /you placed 1st of 3 · your rating 1500 → 1611/);
  assert.deepEqual(controls(s, on), { join: true, leave: false, createParty: true, joinParty: false, leaveParty: false, accept: false, decline: false, changeWorld: true });
});

test("a late poll that knows the match is further on moves the headline with the card, never a new queue", () => {
  let s = run([push({ type: "MATCH_FOUND", ...record })]);
  assert.equal(s.phase, "MATCHED");
  const sent = s.version - 1;
  // Sent before MATCH_FOUND arrived, answered after the server assigned a
  // seat: the card moves to ASSIGNED, and the headline with it (the demo
  // page showed MATCHED above an ASSIGNED card with its leave-game button).
  s = reduce(s, status({ status: "MATCHED", match: { ...record, state: "ASSIGNED", assignment: seat } }, sent));
  assert.equal(s.matches[0]!.state, "ASSIGNED");
  assert.equal(s.phase, "ASSIGNED");
  // A new queue place: a late answer about the old match leaves it alone.
  s = reduce(s, push({ type: "QUEUED", worldType: "ranked", position: 1, queueSize: 1, estimatedWaitSeconds: null }));
  s = reduce(s, status({ status: "MATCHED", match: { ...record, state: "FINISHED" } }, sent));
  assert.equal(s.phase, "QUEUED");
});

test("my-status restores a reload: MATCHED with state ASSIGNED is ASSIGNED, FINISHED with ratingChanges shows the rating", () => {
  let s = reduce(initialState("ann"), status({ status: "MATCHED", match: { ...record, state: "ASSIGNED", assignment: seat } }, 0));
  assert.equal(s.phase, "ASSIGNED");
  assert.deepEqual(controls(s, on), { join: false, leave: false, createParty: false, joinParty: false, leaveParty: false, accept: false, decline: false, changeWorld: false });
  const done = { ...record, state: "FINISHED", result: { playerRanks: { ann: 2 } }, ratingChanges: { ann: { before: 1500, after: 1400, mean: 1400, games: 1 }, ben: { before: 1, after: 2, mean: 2, games: 1 } } };
  s = reduce(s, status({ status: "MATCHED", match: done }, s.version));
  assert.equal(s.phase, "FINISHED");
  assert.equal(s.matches[0]!.rating?.after, 1400, "this player's own change");
});

test("a cancelled proposal's words stay when a poll then says IDLE; a proposal drops the old queue place", () => {
  let s = run([push({ type: "QUEUED", worldType: "duel", position: 2, queueSize: 2, estimatedWaitSeconds: 5 })]);
  assert.match(describeState(s), /position 2 of 2/);
  s = reduce(s, push({ type: "MATCH_PROPOSED", matchId: "p1", worldType: "duel", acceptBy: Date.now() + 20_000, participants: ["ann", "bob"] }));
  assert.equal(s.phase, "PROPOSED");
  assert.equal(s.queue, null);
  assert.doesNotMatch(describeState(s), /position/, "the old page kept 'position 2 of 2' on a proposed tab");
  assert.equal(controls(s, on).accept, true);
  assert.equal(controls(s, on).join, false);
  s = reduce(s, { type: "answer", op: "accept", data: { status: "CANCELLED", matchId: "p1", worldType: "duel", requeued: 1 } });
  assert.equal(s.phase, "IDLE");
  assert.match(describeState(s), /match p1 was cancelled \(you declined\)/);
  s = reduce(s, status({ status: "IDLE" }, s.version));
  assert.match(describeState(s), /cancelled/, "the old page replaced it with a bare IDLE");
  // Someone else declined: back in the queue.
  s = run([push({ type: "MATCH_PROPOSED", matchId: "p2", worldType: "duel", acceptBy: 1, participants: ["ann", "bob"] }), push({ type: "MATCH_CANCELLED", matchId: "p2", worldType: "duel", reason: "DECLINED", requeued: true })], s);
  assert.equal(s.phase, "QUEUED");
  assert.equal(controls(s, on).leave, true);
});

test("an error stays until the state moves on: IN_MATCH shows the held match, the result clears it", () => {
  let s = reduce(initialState("ann"), { type: "failed", op: "join", code: "IN_MATCH", message: "your match m1 is not finished", data: { error: "IN_MATCH", matchId: "m1", assignment: seat } });
  assert.equal(s.phase, "ASSIGNED", "IN_MATCH says where the player is");
  assert.equal(s.error?.code, "IN_MATCH");
  s = reduce(s, status({ status: "MATCHED", match: { ...record, state: "ASSIGNED", assignment: seat } }, s.version));
  assert.equal(s.error?.code, "IN_MATCH", "nothing moved yet");
  s = reduce(s, push({ type: "MATCH_RESULT", matchId: "m1", worldType: "ranked", result: { cancelled: true } }));
  assert.equal(s.phase, "FINISHED");
  assert.equal(s.error, null, "the old page kept the red IN_MATCH after the result");
  s = reduce(s, { type: "failed", op: "join", code: "ALREADY_QUEUED", message: "already", data: { error: "ALREADY_QUEUED", worldType: "ranked", position: 3, queueSize: 4, estimatedWaitSeconds: null } });
  assert.equal(s.phase, "QUEUED");
  assert.equal(s.queue?.position, 3);
});

test("a backfilled player joins the others' card from my-status; a late result of an old match leaves a new queue alone", () => {
  let s = run([push({ type: "MATCH_FOUND", ...record }), push({ type: "MATCH_ASSIGNED", ...record, assignment: seat })]);
  s = reduce(s, status({ status: "MATCHED", match: { ...record, participants: [...record.participants, "dan"], state: "ASSIGNED", assignment: seat } }, s.version));
  assert.deepEqual(s.matches[0]!.participants, ["ann", "ben", "cat", "dan"]);
  // Even a poll older than the latest news adds players (a list only grows).
  s = reduce(s, status({ status: "MATCHED", match: { ...record, participants: [...record.participants, "dan", "eve"], state: "FORMED" } }, 0));
  assert.deepEqual(s.matches[0]!.participants, ["ann", "ben", "cat", "dan", "eve"]);
  assert.equal(s.phase, "ASSIGNED");
  s = reduce(s, push({ type: "MATCH_RESULT", matchId: "m1", worldType: "ranked", result: { cancelled: true } }));
  s = reduce(s, { type: "answer", op: "join", data: { status: "QUEUED", worldType: "ranked", position: 1, queueSize: 1, estimatedWaitSeconds: null } });
  assert.equal(s.phase, "QUEUED");
  s = reduce(s, push({ type: "MATCH_RESULT", matchId: "m1", worldType: "ranked", result: { cancelled: true } }));
  assert.equal(s.phase, "QUEUED");
});

test("parties: an invitation enables Join party, a joined party disables Join and Create party", () => {
  const party = (joined: boolean, state = "ASSEMBLING") => ({
    partyId: "w.p1", worldType: "world1", leader: "bob", state, expiresAt: 1,
    members: [{ playerId: "bob", joined: true }, { playerId: "ann", joined }],
  });
  let s = run([push({ type: "PARTY_UPDATE", party: party(false) })]);
  assert.equal(s.phase, "IDLE");
  assert.equal(controls(s, on).joinParty, true);
  s = reduce(s, status({ status: "IDLE" }, s.version));
  assert.ok(s.party, "my-status does not show invitations: the pushed one stays");
  s = reduce(s, { type: "answer", op: "joinParty", data: { status: "PARTY", party: party(true) } });
  assert.equal(s.phase, "PARTY");
  assert.deepEqual(controls(s, on), { join: false, leave: false, createParty: false, joinParty: false, leaveParty: true, accept: false, decline: false, changeWorld: false });
  s = reduce(s, push({ type: "PARTY_CANCELLED", partyId: "w.p1", worldType: "world1", reason: "LEFT", by: "bob" }));
  assert.equal(s.phase, "IDLE");
  assert.match(describeState(s), /party w\.p1 was cancelled: left \(bob\)/);
  assert.equal(controls(s, { connected: false, gameServers: true }).join, false, "nothing without a socket");
});

test("without game servers a formed match holds nobody: Join stays enabled", () => {
  const s = run([push({ type: "MATCH_FOUND", ...record })]);
  assert.equal(s.phase, "MATCHED");
  assert.equal(controls(s, { connected: true, gameServers: false }).join, true);
  assert.equal(controls(s, on).join, false);
});

test("every message of docs/asyncapi.yaml has its own words", async () => {
  const spec = parse(await readFile(`${REPO}docs/asyncapi.yaml`, "utf8")) as {
    components: { messages: Record<string, { name: string; payload: { properties?: Record<string, unknown> }; examples?: { payload: unknown }[] }> };
  };
  const seen = new Set<string>();
  for (const m of Object.values(spec.components.messages)) {
    if (m.name === "ping") continue; // the client's own
    for (const example of m.examples ?? [{ payload: "service unavailable" }]) {
      const msg = typeof example.payload === "string" ? { type: "TEXT" as const, data: example.payload } : (example.payload as ServerMessage);
      const text = describeMessage(msg, "alice");
      assert.doesNotMatch(text, /^a \S+ message$|undefined|\[object/, `${m.name}: ${text}`);
      seen.add(msg.type);
    }
  }
  for (const type of SERVER_MESSAGE_TYPES) assert.ok(seen.has(type), `an example of ${type} was described`);
});

test("an operator's removal and cancellation are told as such", () => {
  const removed = describeMessage({ type: "TICKET_REMOVED", worldType: "world1", reason: "OPERATOR" }, "alice");
  assert.match(removed, /an operator removed your ticket in world1/);
  assert.doesNotMatch(removed, /live connection/);
  const cancelled = describeMessage({ type: "MATCH_CANCELLED", matchId: "w.m1", worldType: "world1", reason: "OPERATOR", requeued: true }, "alice");
  assert.match(cancelled, /\(an operator cancelled it\); you are back in the queue/);
});

test("a match with rules keeps them on its card and names what its intersections found", () => {
  const rules = [
    { name: "commonMap", inForce: true, value: 1, shared: ["harbor"] },
    { name: "sameBuild", inForce: false },
    { name: "commonMode", inForce: false, value: 1, shared: ["ctf"] },
  ];
  const attributes = { ann: { maps: ["harbor", "mill"] }, ben: { maps: ["harbor"] } };
  let s = run([push({ type: "MATCH_FOUND", ...record, attributes, rules, anchor: "ann", anchorWaitMs: 4210 })]);
  assert.equal(s.phase, "MATCHED");
  assert.deepEqual(s.matches[0]!.rules, rules);
  assert.match(describeState(s), /commonMap: harbor/);
  assert.doesNotMatch(describeState(s), /commonMode/, "a rule that was off decided nothing");
  // A later push without them (a MATCH_ASSIGNED with the data left out) keeps them.
  s = reduce(s, push({ type: "MATCH_ASSIGNED", ...record, assignment: seat }));
  assert.equal(s.phase, "ASSIGNED");
  assert.deepEqual(s.matches[0]!.rules, rules);
  assert.match(describeState(s), /connect to 127\.0\.0\.1:7777 · commonMap: harbor/);
});
