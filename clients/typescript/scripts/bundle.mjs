// Bundles the SDK for the browser with esbuild: one ES module, the local
// stack's demo page's client (tools/local-stack/static/mm-client.js, served
// at /mm-client.js and built into mm-local with include_str!). It is
// committed so that cargo alone builds the stack; a test fails while it
// differs from what this script makes of today's src/.
//
//   node scripts/bundle.mjs          write it
//   node scripts/bundle.mjs --check  exit 1 if it is stale
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const ENTRY = fileURLToPath(new URL("../src/index.ts", import.meta.url));
export const BUNDLE = fileURLToPath(new URL("../../../tools/local-stack/static/mm-client.js", import.meta.url));

/** The bundle's text. */
export async function bundle() {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    legalComments: "none",
    banner: {
      js:
        "// @matchmaking/client for the demo page: built from clients/typescript/src by\n" +
        "// clients/typescript/scripts/bundle.mjs (esbuild). Do not edit; run `npm run bundle`.",
    },
  });
  return result.outputFiles[0].text;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = await bundle();
  if (process.argv.includes("--check")) {
    const old = await readFile(BUNDLE, "utf8").catch(() => "");
    if (old !== text) {
      console.error(`${BUNDLE} is stale: run npm run bundle`);
      process.exit(1);
    }
  } else {
    await writeFile(BUNDLE, text);
  }
}
