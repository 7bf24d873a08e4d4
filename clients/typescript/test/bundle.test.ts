// The demo page's bundle (tools/local-stack/static/mm-client.js, committed
// and built into mm-local) is what scripts/bundle.mjs makes of today's src/,
// and the local stack serves it to the page.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { startStack } from "./support/stack.js";

const script = new URL("../scripts/bundle.mjs", import.meta.url).href;

test("the demo page's bundle is today's SDK (else: npm run bundle)", async (t) => {
  const { bundle, BUNDLE } = (await import(script)) as { bundle(): Promise<string>; BUNDLE: string };
  const committed = await readFile(BUNDLE, "utf8");
  assert.ok(committed === (await bundle()), `${BUNDLE} is stale: run npm run bundle`);

  const stack = await startStack({ MM_WORLDS: "world1:2" });
  t.after(() => stack.stop());
  const res = await fetch(`${stack.httpUrl}/mm-client.js`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/javascript/);
  assert.equal(await res.text(), committed, "mm-local serves the committed bundle (rebuild it: cargo build)");
  // The page's Play view is a module of its own (/play.js), which imports the SDK bundle.
  const page = await (await fetch(`${stack.httpUrl}/`)).text();
  assert.match(page, /from "\/play\.js"/, "the demo page imports its Play view");
  const play = await fetch(`${stack.httpUrl}/play.js`);
  assert.match(play.headers.get("content-type") ?? "", /^text\/javascript/);
  assert.match(await play.text(), /from "\/mm-client\.js"/, "the Play view imports the SDK bundle");
});
