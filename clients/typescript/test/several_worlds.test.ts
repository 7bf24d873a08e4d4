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
