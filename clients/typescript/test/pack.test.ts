// `npm pack` makes a package whose README quick start works from a fresh
// directory: the tarball is installed into an empty project (its only
// dependency, ws, from the npm cache or registry), the quick start block of
// the README inside the tarball is run as it is, with only the local
// stack's addresses put in: it prints QUEUED, then the match two more
// players complete, and exits; a second run meanwhile is ALREADY_QUEUED and
// waits for the same match; a run while the game is on is IN_MATCH and
// prints the seat to go back to. The package is not private and ships its
// types.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { MatchmakingClient } from "@matchmaking/client";
import { REPO, startStack } from "./support/stack.js";

const run = promisify(execFile);
const PACKAGE = fileURLToPath(new URL("..", import.meta.url));

/** The environment without what `npm test` sets for its own run. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return env;
}

test("npm pack, installed in a fresh directory, runs the README quick start", async (t) => {
  // A long demo game, so the IN_MATCH run below comes while alice's game is on.
  const stack = await startStack({ MM_RULES_FILE: `${REPO}tools/local-stack/rules.json`, MM_DEMO_GAME_SECS: "120" });
  const dir = await mkdtemp(join(tmpdir(), "mm-sdk-pack-"));
  t.after(async () => {
    await stack.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const packed = await run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: PACKAGE, env: npmEnv() });
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  assert.ok(info, packed.stderr);
  const files = info.files.map((f) => f.path);
  for (const f of ["package.json", "README.md", "dist/index.js", "dist/index.d.ts"]) assert.ok(files.includes(f), `${f} in ${files}`);
  assert.equal(info.filename, "matchmaking-client-0.1.0.tgz", "the name the README's install command uses");
  const manifest = JSON.parse(await readFile(join(PACKAGE, "package.json"), "utf8")) as Record<string, unknown>;
  assert.equal(manifest["private"], undefined, "publishable");
  assert.equal(manifest["types"], "./dist/index.d.ts");
  assert.ok(!files.some((f) => f.startsWith("test/") || f.startsWith("build-test/")), "no tests shipped");

  const app = join(dir, "app");
  await run("mkdir", [app]);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(dir, info.filename)], {
    cwd: app,
    env: npmEnv(),
  });
  const readme = await readFile(join(app, "node_modules/@matchmaking/client/README.md"), "utf8");
  const quickStart = /```js\n(import \{ Matchmaking[\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(quickStart, "the README has a js quick start");
  assert.ok(quickStart.includes("http://127.0.0.1:3000") && quickStart.includes("ws://127.0.0.1:3001"));
  const script = quickStart.replaceAll("http://127.0.0.1:3000", stack.httpUrl).replaceAll("ws://127.0.0.1:3001", stack.wsUrl);
  await writeFile(join(app, "quickstart.mjs"), script);

  // The first run queues; a second one meanwhile is ALREADY_QUEUED and waits for the same match.
  const first = runScript(t, app);
  await first.printed(/status: 'QUEUED'/);
  const second = runScript(t, app);
  await second.printed(/^already queued in world1 at position 1$/m);
  for (const sub of ["bob", "carol"]) {
    const other = new MatchmakingClient({ httpUrl: stack.httpUrl, token: await stack.token(sub) });
    await other.join({ worldType: "world1" });
  }
  for (const waiting of [first, second]) {
    await waiting.printed(/^matched \S+ \[ 'alice', 'bob', 'carol' \]$/m);
    assert.equal(await waiting.exited, 0, `the quick start exits once matched; stderr: ${waiting.err()}`);
  }

  // The demo allocator assigns the match; while the game is on a run is IN_MATCH and finds its seat.
  const alice = new MatchmakingClient({ httpUrl: stack.httpUrl, token: await stack.token("alice") });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const status = await alice.myStatus();
    if (status.status === "MATCHED" && status.match.state === "ASSIGNED") break;
    assert.ok(Date.now() < deadline, `alice's match is assigned: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const third = runScript(t, app);
  await third.printed(/^back to match \S+ on 127\.0\.0\.1:\d+$/m);
  assert.equal(await third.exited, 0, `the quick start exits after finding the game; stderr: ${third.err()}`);
});

/** Runs the quick start in `app`: what it printed, and when it exited. */
function runScript(t: TestContext, app: string) {
  const child = spawn(process.execPath, ["quickstart.mjs"], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.after(() => {
    child.kill();
  });
  // Polls the output with a deadline (the run may print before anyone listens).
  const printed = async (what: RegExp) => {
    const deadline = Date.now() + 20_000;
    let done = false;
    void exited.then(() => (done = true));
    while (!what.test(out)) {
      if (done) throw new Error(`exited without ${what}; stdout: ${out}; stderr: ${err}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within 20 s; stdout: ${out}; stderr: ${err}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return { printed, exited, err: () => err };
}
