// Role queues through the SDK against a real local stack: a quota rule
// gives each player exactly one role they offered, the match record says
// who plays what (the join answer and my-status), every team meets its
// quotas, and a role the world does not know is refused naming the
// attribute.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { MatchmakingClient, isMatchmakingError, type MatchRecord } from "@matchmaking/client";
import { startStack, type Stack } from "./support/stack.js";

const RULES = {
  attributes: {
    roles: { type: "stringList", values: ["tank", "healer", "damage"], maxItems: 3, missing: "refuse" },
  },
  worlds: [
    {
      name: "trio",
      teamSize: 3,
      teams: 2,
      rules: [
        {
          name: "roleQueue",
          type: "quota",
          attribute: "roles",
          quotas: [
            { value: "tank", min: 1, max: 1 },
            { value: "healer", min: 1, max: 1 },
            { value: "damage", min: 1, max: 1 },
          ],
        },
      ],
    },
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

test("each player plays one role they offered and every team meets the quotas", async () => {
  const offers: Array<[string, string[]]> = [
    ["d1", ["damage"]],
    ["d2", ["damage"]],
    ["d3", ["damage"]],
    ["t1", ["tank"]],
    ["t2", ["tank"]],
    ["h1", ["healer"]],
  ];
  for (const [p, roles] of offers) {
    const joined = await client(p).join({ worldType: "trio", attributes: { roles } });
    assert.equal(joined.status, "QUEUED", `${p}: ${JSON.stringify(joined)}`);
  }
  const last = await client("flex").join({ worldType: "trio", attributes: { roles: ["damage", "healer"] } });
  assert.equal(last.status, "MATCHED", JSON.stringify(last));
  const match = (last as { match: MatchRecord }).match;
  const roles = match.roles ?? {};
  assert.equal(roles.flex, "healer", JSON.stringify(match));
  for (const team of match.teams ?? []) {
    assert.deepEqual(team.map((p) => roles[p]).sort(), ["damage", "healer", "tank"], JSON.stringify(match));
  }
  const status = await client("t1").myStatus();
  assert.equal(status.status, "MATCHED");
  assert.deepEqual((status as { match: MatchRecord }).match.roles, roles);
  assert.equal((await client("d3").myStatus()).status, "QUEUED", "the third damage player waits");
});

test("a role the world does not know is refused, naming the attribute", async () => {
  await assert.rejects(client("mage").join({ worldType: "trio", attributes: { roles: ["mage"] } }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "INVALID_ATTRIBUTES"), String(e));
    assert.equal(e.data.attribute, "roles");
    return true;
  });
  assert.deepEqual(await client("mage").myStatus(), { status: "IDLE" });
});
