// `npm pack` makes a package whose README quick start works from a fresh
// directory: the tarball is installed into an empty project (its only
// dependency, ws, from the npm cache or registry), the quick start block of
// the README inside the tarball is run as it is, with only the local
// stack's addresses put in, and it prints QUEUED, then the match two more
// players complete, and exits.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
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
  const stack = await startStack({ MM_RULES_FILE: `${REPO}tools/local-stack/rules.json` });
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

  const child = spawn(process.execPath, ["quickstart.mjs"], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const printed = (what: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (what.test(out)) resolve();
      };
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        check();
      });
      check();
      const timer = setTimeout(() => reject(new Error(`no ${what} within 20 s; stdout: ${out}; stderr: ${err}`)), 20_000);
      void exited.then(() => {
        clearTimeout(timer);
        if (!what.test(out)) reject(new Error(`exited without ${what}; stdout: ${out}; stderr: ${err}`));
      });
    });
  t.after(() => {
    child.kill();
  });
  await printed(/status: 'QUEUED'/);
  for (const sub of ["bob", "carol"]) {
    const other = new MatchmakingClient({ httpUrl: stack.httpUrl, token: await stack.token(sub) });
    await other.join({ worldType: "world1" });
  }
  await printed(/^matched \S+ \[ 'alice', 'bob', 'carol' \]$/m);
  assert.equal(await exited, 0, `the quick start exits once matched; stderr: ${err}`);
});
