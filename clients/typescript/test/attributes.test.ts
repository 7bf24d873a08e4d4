// Player attributes and match rules through the SDK against a real local
// stack: a trusted attribute written with the configured writer scope (and
// refused without it), the typed refusals of bad attributes
// (INVALID_ATTRIBUTES naming the attribute, ATTRIBUTES_REQUIRED,
// ATTRIBUTES_CONFLICT), and a match whose record says what its
// intersection rule found in common.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { MatchmakingClient, isMatchmakingError, type MatchRecord } from "@matchmaking/client";
import { startStack, type Stack } from "./support/stack.js";

const WRITER_SCOPE = "matchmaking/attributes.write";
const RULES = {
  attributeStore: { writerScope: WRITER_SCOPE },
  attributes: {
    modes: { type: "stringList", values: ["ctf", "koth", "dm", "tdm"], maxItems: 4, missing: "refuse" },
    platform: { type: "string", source: "trusted", values: ["pc", "console"], missing: "refuse" },
    build: { type: "string" },
  },
  worlds: [
    {
      name: "crossmode",
      teamSize: 2,
      maxPartySize: 1,
      rules: [
        { name: "commonMode", type: "intersection", attribute: "modes" },
        { name: "samePlatform", type: "equality", attribute: "platform" },
      ],
    },
    { name: "builds", teamSize: 4, rules: [{ name: "sameBuild", type: "equality", attribute: "build" }] },
    { name: "plain", teamSize: 2 },
  ],
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

test("trusted attributes: written with attributeStore.writerScope, refused without it or for a client attribute", async () => {
  const writer = client("game-server", { scp: [WRITER_SCOPE] });
  const stored = await writer.putAttributes("ann", { attributes: { platform: "pc" } });
  assert.deepEqual(stored, { playerId: "ann", attributes: { platform: "pc" }, previousAttributes: {} });
  const again = await writer.putAttributes("ann", { attributes: { platform: "pc" } });
  assert.deepEqual(again.previousAttributes, { platform: "pc" });

  await assert.rejects(client("ann").putAttributes("ann", { attributes: { platform: "console" } }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "FORBIDDEN"), String(e));
    assert.equal(e.data.required, WRITER_SCOPE);
    return true;
  });
  // modes comes from the join body: a writer may not store it.
  await assert.rejects(writer.putAttributes("ann", { attributes: { modes: ["ctf"] } }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "INVALID_ATTRIBUTES"), String(e));
    assert.equal(e.status, 400);
    assert.deepEqual(e.data, { error: "INVALID_ATTRIBUTES", field: "attributes", attribute: "modes" });
    return true;
  });
});

test("bad attributes are refused naming the attribute, and change nothing", async () => {
  const writer = client("game-server", { scp: [WRITER_SCOPE] });
  await writer.putAttributes("bob", { attributes: { platform: "console" } });
  const bob = client("bob");
  const refused = async (body: Parameters<MatchmakingClient["join"]>[0], attribute: string | undefined) =>
    assert.rejects(bob.join(body), (e: unknown) => {
      assert.ok(isMatchmakingError(e, "INVALID_ATTRIBUTES"), `${JSON.stringify(body)}: ${String(e)}`);
      assert.equal(e.data.attribute, attribute, JSON.stringify(body));
      return true;
    });
  await refused({ worldType: "plain", attributes: { modes: ["ctf"] } }, undefined);
  await refused({ worldType: "crossmode", attributes: { modes: ["ctf", "ctf"] } }, "modes");
  await refused({ worldType: "crossmode", attributes: { modes: ["ctf", "capture"] } }, "modes");
  await refused({ worldType: "crossmode", attributes: { modes: "ctf" } }, "modes");
  await refused({ worldType: "crossmode", attributes: { modes: ["ctf"], platform: "pc" } }, "platform");
  await refused({ worldType: "crossmode", attributes: { modes: ["ctf"], rank: 3 } }, "rank");
  await refused({ worldType: "crossmode" }, "modes");
  // A world without attributes takes a null, as none.
  const plain = await bob.join({ worldType: "plain", attributes: null });
  assert.equal(plain.status, "QUEUED");
  await bob.leave({ worldType: "plain" });

  // No trusted platform stored for cat, and the world refuses a ticket without one.
  await assert.rejects(client("cat").join({ worldType: "crossmode", attributes: { modes: ["ctf"] } }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "ATTRIBUTES_REQUIRED"), String(e));
    assert.equal(e.status, 409);
    assert.deepEqual(e.data, { error: "ATTRIBUTES_REQUIRED", worldType: "crossmode", attribute: "platform" });
    return true;
  });
  assert.deepEqual(await client("cat").myStatus(), { status: "IDLE" });
});

test("a match records the values its intersection found and the rules in force", async () => {
  const writer = client("game-server", { scp: [WRITER_SCOPE] });
  await writer.putAttributes("dan", { attributes: { platform: "pc" } });
  await writer.putAttributes("eve", { attributes: { platform: "pc" } });
  const queued = await client("dan").join({ worldType: "crossmode", attributes: { modes: ["koth", "ctf"] } });
  assert.equal(queued.status, "QUEUED");
  const matched = await client("eve").join({ worldType: "crossmode", attributes: { modes: ["dm", "koth"] } });
  assert.equal(matched.status, "MATCHED", JSON.stringify(matched));
  const match = (matched as { match: MatchRecord }).match;
  assert.deepEqual([...match.participants].sort(), ["dan", "eve"]);
  assert.deepEqual(match.attributes?.["dan"]?.["modes"], ["ctf", "koth"], "a list is recorded sorted");
  assert.deepEqual(match.attributes?.["eve"]?.["modes"], ["dm", "koth"]);
  const common = match.rules?.find((r) => r.name === "commonMode");
  assert.equal(common?.inForce, true, JSON.stringify(match.rules));
  assert.deepEqual(common?.shared, ["koth"]);
  assert.equal(match.rules?.find((r) => r.name === "samePlatform")?.inForce, true);
  assert.ok(match.anchor === "dan" || match.anchor === "eve", `anchor ${match.anchor}`);
  assert.ok(typeof match.anchorWaitMs === "number" && match.anchorWaitMs >= 0);
  // The full record says the same.
  const view = await client("dan").match(match.matchId);
  assert.deepEqual("match" in view ? view.match.rules : view.rules, match.rules);
});

test("a party member whose value an equality rule compares must agree with the members (ATTRIBUTES_CONFLICT)", async () => {
  const created = await client("fay").createParty({ worldType: "builds", members: ["gus"], attributes: { build: "1.4" } });
  const partyId = created.party.partyId;
  await assert.rejects(client("gus").joinParty(partyId, { attributes: { build: "1.5" } }), (e: unknown) => {
    assert.ok(isMatchmakingError(e, "ATTRIBUTES_CONFLICT"), String(e));
    assert.equal(e.status, 409);
    assert.deepEqual(e.data, { error: "ATTRIBUTES_CONFLICT", worldType: "builds", attribute: "build" });
    return true;
  });
  const joined = await client("gus").joinParty(partyId, { attributes: { build: "1.4" } });
  assert.equal(joined.status, "QUEUED", JSON.stringify(joined));
});
