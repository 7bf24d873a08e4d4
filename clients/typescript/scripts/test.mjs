// `npm test`: runs every compiled test file with node's test runner
// (node --test), against real local stacks started by the tests from the
// mm-local binary: MM_LOCAL_BIN if set (scripts/test.sh passes the one
// `cargo test` built), else built here with cargo.
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const repo = fileURLToPath(new URL("../../..", import.meta.url));
const env = { ...process.env };
// A relative MM_LOCAL_BIN is the caller's: npm runs this in the package's directory.
if (env.MM_LOCAL_BIN && !isAbsolute(env.MM_LOCAL_BIN)) {
  env.MM_LOCAL_BIN = resolve(env.INIT_CWD ?? process.cwd(), env.MM_LOCAL_BIN);
}
if (!env.MM_LOCAL_BIN) {
  console.error("building mm-local (cargo build -p local-stack --bin mm-local); set MM_LOCAL_BIN to skip");
  const out = execFileSync("cargo", ["build", "-p", "local-stack", "--bin", "mm-local", "--message-format=json"], {
    cwd: repo,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 256 * 1024 * 1024,
  });
  for (const line of out.split("\n")) {
    if (!line.startsWith("{")) continue;
    const m = JSON.parse(line);
    if (m.reason === "compiler-artifact" && m.target?.name === "mm-local" && m.executable) env.MM_LOCAL_BIN = m.executable;
  }
  if (!env.MM_LOCAL_BIN) throw new Error("cargo built no mm-local executable");
}
const dir = `${root}build-test/`;
const files = readdirSync(dir, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith(".test.js"))
  .sort()
  .map((f) => dir + f);
const only = process.argv.slice(2);
const chosen = only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files;
const run = spawnSync(process.execPath, ["--test", ...chosen], { cwd: root, env, stdio: "inherit" });
process.exit(run.status ?? 1);
