// Writes the .meta file Unity needs beside every file and folder it imports
// from this package (a package added by git URL is immutable: Unity ignores
// an asset without one). GUIDs derive from the path, so they are stable.
// Skipped, as Unity skips them: names starting with "." and ending with "~",
// and build/ (git-ignored).
//   node tools/unity-meta.mjs          write the missing .meta files
//   node tools/unity-meta.mjs --check  exit 1 if one is missing or stale
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync, unlinkSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const skip = (name) => name.startsWith(".") || name.endsWith("~") || name.endsWith(".meta") || name === "build";

function meta(rel, isDir) {
  const guid = createHash("md5").update(`com.matchmaking.client/${rel}`).digest("hex");
  const tail = "  externalObjects: {}\n  userData: \n  assetBundleName: \n  assetBundleVariant: \n";
  if (isDir) return `fileFormatVersion: 2\nguid: ${guid}\nfolderAsset: yes\nDefaultImporter:\n${tail}`;
  if (rel.endsWith(".cs"))
    return `fileFormatVersion: 2\nguid: ${guid}\nMonoImporter:\n  externalObjects: {}\n  serializedVersion: 2\n  defaultReferences: []\n  executionOrder: 0\n  icon: {instanceID: 0}\n  userData: \n  assetBundleName: \n  assetBundleVariant: \n`;
  if (rel.endsWith(".asmdef")) return `fileFormatVersion: 2\nguid: ${guid}\nAssemblyDefinitionImporter:\n${tail}`;
  if (/\.(json|md|txt)$/.test(rel)) return `fileFormatVersion: 2\nguid: ${guid}\nTextScriptImporter:\n${tail}`;
  return `fileFormatVersion: 2\nguid: ${guid}\nDefaultImporter:\n${tail}`;
}

const check = process.argv.includes("--check");
let bad = 0;
const wanted = new Set();
function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    if (skip(name)) continue;
    const path = join(dir, name);
    const isDir = statSync(path).isDirectory();
    const rel = relative(root, path);
    const text = meta(rel, isDir);
    wanted.add(path + ".meta");
    const old = existsSync(path + ".meta") ? readFileSync(path + ".meta", "utf8") : null;
    if (old !== text) {
      if (check) {
        console.error(`${rel}.meta is missing or stale: run node clients/csharp/tools/unity-meta.mjs`);
        bad++;
      } else writeFileSync(path + ".meta", text);
    }
    if (isDir) walk(path);
  }
}
walk(root);
// A .meta whose asset is gone.
function orphans(dir) {
  for (const name of readdirSync(dir)) {
    if (name.startsWith(".") || name.endsWith("~") || name === "build") continue;
    const path = join(dir, name);
    if (name.endsWith(".meta") && !wanted.has(path)) {
      if (check) {
        console.error(`${relative(root, path)} has no asset`);
        bad++;
      } else unlinkSync(path);
    } else if (!name.endsWith(".meta") && statSync(path).isDirectory()) orphans(path);
  }
}
orphans(root);
process.exit(bad ? 1 : 0);
