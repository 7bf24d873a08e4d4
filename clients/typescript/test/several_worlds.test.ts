// One ticket in several worlds through the SDK against a real local stack:
// a join with `alsoIn` waits in every world of the queueGroup at once, the
// answer and my-status name the other worlds, the first match in any of
// them takes the ticket from all, and a world outside the group is refused.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { MatchmakingClient, isMatchmakingError, type MatchRecord } from "@matchmaking/client";
import { startStack, type Stack } from "./support/stack.js";

const RULES = {
  worlds: [
    { name: "casual", teamSize: 3, queueGroup: "pvp" },
    { name: "ranked", teamSize: 2, queueGroup: "pvp" },
    { name: "solo", teamSize: 2 },
  ],
};

let stack: Stack;
const client = (sub: string) => new MatchmakingClient({ httpUrl: stack.httpUrl, token: stack.tokenSource(sub) });

before(async () => {
  stack = await startStack({ MM_RULES: JSON.stringify(RULES), MM_DEMO_ALLOCATOR: "false" });
});

after(async () => {
  await stack?.stop();
});

test("a ticket in two worlds is matched in the first that completes and leaves the other", async () => {
  const joined = await client("both").join({ worldType: "casual", alsoIn: [{ worldType: "ranked" }] });
  assert.equal(joined.status, "QUEUED", JSON.stringify(joined));
  assert.deepEqual((joined as { alsoQueuedIn?: string[] }).alsoQueuedIn, ["ranked"]);
  const status = await client("both").myStatus();
  assert.equal(status.status, "QUEUED");
  assert.deepEqual((status as { alsoQueuedIn?: string[] }).alsoQueuedIn, ["ranked"]);

  assert.equal((await client("c1").join({ worldType: "casual" })).status, "QUEUED");
  const ranked = await client("r1").join({ worldType: "ranked" });
  assert.equal(ranked.status, "MATCHED", JSON.stringify(ranked));
  const match = (ranked as { match: MatchRecord }).match;
  assert.equal(match.worldType, "ranked");
  assert.deepEqual([...match.participants].sort(), ["both", "r1"]);
  // Gone from casual too: c1 waits alone there.
  const casual = await client("c1").myStatus();
  assert.equal(casual.status, "QUEUED");
  assert.equal((casual as { queueSize: number }).queueSize, 1);
});

test("a world outside the group is refused and nothing is queued", async () => {
  await assert.rejects(
    client("lone").join({ worldType: "casual", alsoIn: [{ worldType: "solo" }] }),
    (e: unknown) => {
      assert.ok(isMatchmakingError(e, "INVALID_WORLDS"), String(e));
      return true;
    },
  );
  assert.deepEqual(await client("lone").myStatus(), { status: "IDLE" });
});

test("a party in two worlds shows them, and the first match takes it from both", async () => {
  const casualBefore = (await client("c9").join({ worldType: "casual" })) as { queueSize: number };
  await client("c9").leave({ worldType: "casual" });
  const created = await client("lead").createParty({
    worldType: "ranked",
    members: ["mate"],
    alsoIn: [{ worldType: "casual" }],
  });
  assert.equal(created.status, "PARTY", JSON.stringify(created));
  const party = (created as { party: { partyId: string; alsoQueuedIn?: string[] } }).party;
  assert.deepEqual(party.alsoQueuedIn, ["casual"]);
  // The party fills ranked (2 players) at once, so it plays there.
  const joined = await client("mate").joinParty(party.partyId);
  assert.equal(joined.status, "MATCHED", JSON.stringify(joined));
  const match = (joined as { match: MatchRecord }).match;
  assert.equal(match.worldType, "ranked");
  assert.deepEqual([...match.participants].sort(), ["lead", "mate"]);
  // Not in casual any more: its queue is as it was.
  const again = await client("c9").join({ worldType: "casual" });
  assert.equal(again.status, "QUEUED", JSON.stringify(again));
  assert.equal((again as { queueSize: number }).queueSize, casualBefore.queueSize, JSON.stringify(again));
});

test("a party join naming a world the party does not queue in is refused", async () => {
  const created = await client("lead2").createParty({ worldType: "casual", members: ["mate2"] });
  const partyId = (created as { party: { partyId: string } }).party.partyId;
  await assert.rejects(client("mate2").joinParty(partyId, { alsoIn: [{ worldType: "ranked" }] }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "INVALID_WORLDS"), String(e));
    return true;
  });
  const status = await client("mate2").myStatus();
  assert.equal(status.status, "IDLE", JSON.stringify(status));
});
