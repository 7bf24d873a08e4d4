// Generates the C# SDK's wire types and route table from the specs:
//   Runtime/Generated/Types.cs     every schema of docs/openapi.yaml a route
//                                  uses, every message of docs/asyncapi.yaml
//   Runtime/Generated/Client.cs    one MatchmakingClient method per operation
//   Runtime/Generated/Spec.cs      operations (method, path, scope, errors),
//                                  error codes, message types
//
//   node tools/generate.mjs          write the files
//   node tools/generate.mjs --check  exit 1 if a committed file differs from
//                                    what today's specs give (the NUnit suite
//                                    runs this: the types cannot drift)
// MM_OPENAPI / MM_ASYNCAPI read another spec file (the suite's check that a
// changed spec is caught).
//
// It reads YAML with the `yaml` package of the TypeScript SDK's node_modules
// (clients/typescript: `scripts/install-deps.sh sdk`); the C# library itself
// depends on nothing but the base class library.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const require = createRequire(here("../../typescript/package.json"));
const { parse } = require("yaml");

export const OUTPUTS = {
  types: here("../Runtime/Generated/Types.cs"),
  client: here("../Runtime/Generated/Client.cs"),
  spec: here("../Runtime/Generated/Spec.cs"),
  events: here("../Runtime/Generated/Events.cs"),
};

const pascal = (s) =>
  s
    .replace(/[^A-Za-z0-9]+(.)?/g, (_, c) => (c ? c.toUpperCase() : ""))
    .replace(/^./, (c) => c.toUpperCase())
    .replace(/^([A-Z])([A-Z]+)$/, (_, a, b) => a + b.toLowerCase());
const constName = (s) => s.toLowerCase().split(/[^a-z0-9]+/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");
const xml = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const doc = (indent, text) =>
  text
    ? `${indent}/// <summary>\n${String(text).trim().split("\n").map((l) => `${indent}/// ${xml(l)}`).join("\n")}\n${indent}/// </summary>\n`
    : "";
const lit = (s) => JSON.stringify(s);
const RESERVED = new Set(["Raw", "Has", "As", "Wrap", "Parse", "Get", "Set", "ToJson", "ToString", "Equals", "GetHashCode", "GetType"]);

export function generate(texts = {}) {
  const specs = {
    openapi: parse(texts.openapi ?? readFileSync(process.env.MM_OPENAPI || here("../../../docs/openapi.yaml"), "utf8")),
    asyncapi: parse(texts.asyncapi ?? readFileSync(process.env.MM_ASYNCAPI || here("../../../docs/asyncapi.yaml"), "utf8")),
  };
  const classes = new Map(); // name -> { source, pointer, text, keys }
  const pending = [];

  const lookup = (src, ref) => {
    if (!ref.startsWith("#/")) throw new Error(`unsupported $ref ${ref}`);
    let node = specs[src];
    for (const part of ref.slice(2).split("/")) node = node[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (node === undefined) throw new Error(`${src}: dangling $ref ${ref}`);
    return node;
  };
  const deref = (src, s) => {
    while (s && s.$ref) s = lookup(src, s.$ref);
    return s;
  };
  // The properties and required names of an object schema (allOf merged).
  const objectParts = (src, s) => {
    s = deref(src, s);
    const props = {};
    const required = new Set(s.required ?? []);
    if (s.oneOf && s.oneOf.every((p) => isObjectLike(src, p))) {
      // One class for every variant: each field of any variant, required when every variant requires it.
      const parts = s.oneOf.map((p) => objectParts(src, p));
      for (const p of parts) for (const [k, v] of Object.entries(p.props)) if (!(k in props) || !v.const) props[k] = props[k] && props[k].const !== undefined && v.const !== undefined && props[k].const !== v.const ? { type: typeof v.const } : v;
      for (const k of Object.keys(props)) if (parts.every((p) => p.required.has(k))) required.add(k);
    }
    for (const part of s.allOf ?? []) {
      const p = objectParts(src, part);
      Object.assign(props, p.props);
      for (const r of p.required) required.add(r);
    }
    Object.assign(props, s.properties ?? {});
    return { props, required };
  };
  const isObjectLike = (src, s) => {
    s = deref(src, s);
    return !!(
      s &&
      (s.properties ||
        (s.allOf && s.allOf.every((p) => isObjectLike(src, p))) ||
        (s.oneOf && s.oneOf.every((p) => isObjectLike(src, p))))
    );
  };

  /** The C# type, codec and spec type of a schema. */
  const typeOf = (src, s, owner, prop, required) => {
    if (s.$ref) {
      const target = lookup(src, s.$ref);
      if (isObjectLike(src, target)) {
        const name = s.$ref.split("/").pop();
        want(src, s.$ref, name);
        return { cs: name, codec: `Codecs.Model<${name}>()`, spec: "object" };
      }
      return typeOf(src, target, owner, prop, required);
    }
    const alts = s.oneOf ?? s.anyOf;
    if (alts) {
      const nonNull = alts.filter((a) => a.type !== "null");
      if (nonNull.length === 1) return typeOf(src, nonNull[0], owner, prop, false);
      return { cs: "object", codec: "Codecs.Any", spec: "any" };
    }
    if (s.allOf || s.properties) {
      const name = owner + pascal(prop);
      pending.push({ src, schema: s, name, pointer: `${owner}.${prop}` });
      return { cs: name, codec: `Codecs.Model<${name}>()`, spec: "object" };
    }
    let type = s.type;
    let nullable = !required;
    if (Array.isArray(type)) {
      if (type.includes("null")) nullable = true;
      type = type.filter((t) => t !== "null");
      type = type.length === 1 ? type[0] : undefined;
      if (!type) return { cs: "object", codec: "Codecs.Any", spec: "any" };
    }
    if (s.const !== undefined && type === undefined) {
      type = typeof s.const === "string" ? "string" : typeof s.const === "boolean" ? "boolean" : "number";
    }
    if (s.enum && type === undefined) type = "string";
    switch (type) {
      case "string":
        return { cs: "string", codec: "Codecs.String", spec: "string" };
      case "integer":
        return nullable ? { cs: "long?", codec: "Codecs.NLong", spec: "integer" } : { cs: "long", codec: "Codecs.Long", spec: "integer" };
      case "number":
        return nullable ? { cs: "double?", codec: "Codecs.NDouble", spec: "number" } : { cs: "double", codec: "Codecs.Double", spec: "number" };
      case "boolean":
        return nullable ? { cs: "bool?", codec: "Codecs.NBool", spec: "boolean" } : { cs: "bool", codec: "Codecs.Bool", spec: "boolean" };
      case "array": {
        const item = s.items ? typeOf(src, s.items, owner, prop + "Item", true) : { cs: "object", codec: "Codecs.Any" };
        return { cs: `IList<${item.cs}>`, codec: `Codecs.List(${item.codec})`, spec: "array" };
      }
      case "object":
        if (s.additionalProperties && typeof s.additionalProperties === "object") {
          const item = typeOf(src, s.additionalProperties, owner, prop + "Value", true);
          return { cs: `IDictionary<string, ${item.cs}>`, codec: `Codecs.Map(${item.codec})`, spec: "object" };
        }
        return { cs: "object", codec: "Codecs.Any", spec: "object" };
      default:
        return { cs: "object", codec: "Codecs.Any", spec: "any" };
    }
  };

  const want = (src, ref, name) => {
    if (classes.has(name)) {
      const c = classes.get(name);
      if (c.source !== src) {
        // The same schema in both specs (PartyView, MatchResult, ...): one class; they must agree.
        const mine = Object.keys(objectParts(src, lookup(src, ref)).props).sort().join(",");
        if (mine !== c.keys) throw new Error(`${name}: ${src} has fields ${mine}, ${c.source} has ${c.keys}`);
      }
      return;
    }
    classes.set(name, { source: src, keys: Object.keys(objectParts(src, lookup(src, ref)).props).sort().join(","), text: null });
    pending.push({ src, schema: lookup(src, ref), name, pointer: `${src}:${ref}`, placeholder: true });
  };

  const renderClass = (src, schema, name, pointer, base = "JsonModel") => {
    const { props, required } = objectParts(src, schema);
    const s = deref(src, schema);
    let out = doc("    ", s.description) + `    [SpecSchema(${lit(pointer)})]\n    public partial class ${name} : ${base}\n    {\n`;
    for (const [json, ps] of Object.entries(props)) {
      let prop = pascal(json);
      if (prop === name || RESERVED.has(prop)) prop += "Value";
      const req = required.has(json);
      const t = typeOf(src, ps, name, json, req);
      const d = deref(src, ps) ?? {};
      let text = ps.description ?? d.description ?? "";
      if (ps.const !== undefined) text = `always ${JSON.stringify(ps.const)}` + (text ? `: ${text}` : "");
      else if (d.enum) text = `one of ${d.enum.map((v) => JSON.stringify(v)).join(", ")}` + (text ? `: ${text}` : "");
      out += doc("        ", text);
      out += `        [JsonField(${lit(json)}, ${lit(t.spec)}, ${req})]\n`;
      const hides = base === "ServerMessage" && prop === "Type" ? "new " : "";
      out += `        public ${hides}${t.cs} ${prop} { get { return Get(${lit(json)}, ${t.codec}); } set { Set(${lit(json)}, value, ${t.codec}); } }\n`;
    }
    return out + "    }\n";
  };

  // Operations: requests, answers (union classes per operation), errors.
  const operations = [];
  const unions = [];
  const errorClasses = new Map(); // code -> class
  for (const [path, item] of Object.entries(specs.openapi.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "delete", "patch"].includes(method)) continue;
      const id = op.operationId;
      const scope = (op.security ?? []).flatMap((s) => Object.values(s).flat())[0] ?? null;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => deref("openapi", p));
      const pathParams = params.filter((p) => p.in === "path").map((p) => p.name);
      const queryParams = params.filter((p) => p.in === "query").map((p) => ({ name: p.name, cs: deref("openapi", p.schema ?? {}).type === "integer" ? "long?" : "string" }));
      let request = null;
      let bodyRequired = false;
      if (op.requestBody) {
        const rb = deref("openapi", op.requestBody);
        const schema = rb.content["application/json"].schema;
        bodyRequired = rb.required === true;
        if (!schema.$ref) throw new Error(`${id}: inline request body`);
        request = schema.$ref.split("/").pop();
        want("openapi", schema.$ref, request);
      }
      let result = null;
      let successStatus = null;
      const errors = [];
      for (const [status, resp0] of Object.entries(op.responses)) {
        const resp = deref("openapi", resp0);
        const schema = resp.content?.["application/json"]?.schema;
        if (!schema) continue;
        const envelopes = (schema.anyOf ?? [schema]).map((e) => deref("openapi", e)).filter((e) => e.properties?.data);
        for (const env of envelopes) {
          const data = env.properties.data;
          if (/^2/.test(status)) {
            successStatus = Number(status);
            let resultName = pascal(id) + "Result";
            if (specs.openapi.components.schemas[resultName]) resultName = pascal(id) + "Answer";
            if (data.$ref) {
              result = data.$ref.split("/").pop();
              want("openapi", data.$ref, result);
            } else if (data.oneOf) {
              result = resultName;
              unions.push({ name: resultName, id, variants: data.oneOf.map((v) => v.$ref) });
              for (const v of data.oneOf) want("openapi", v.$ref, v.$ref.split("/").pop());
            } else {
              result = resultName;
              pending.push({ src: "openapi", schema: data, name: resultName, pointer: `openapi:${id} ${status} data` });
            }
          } else {
            for (const v of data.oneOf ?? [data]) {
              const target = deref("openapi", v);
              const code = objectParts("openapi", target).props.error?.const;
              if (!code) throw new Error(`${id} ${status}: an error without a code const`);
              const cls = v.$ref.split("/").pop();
              want("openapi", v.$ref, cls);
              errorClasses.set(code, cls);
              errors.push({ status: Number(status), code });
            }
          }
        }
      }
      if (!result) throw new Error(`${id}: no success answer`);
      operations.push({ id, method: method.toUpperCase(), path, scope, pathParams, queryParams, request, bodyRequired, result, successStatus, errors, summary: op.summary });
    }
  }
  // Every error schema, reachable from a route or not (a code's details class).
  for (const [name, s] of Object.entries(specs.openapi.components.schemas)) {
    const code = isObjectLike("openapi", s) ? objectParts("openapi", s).props.error?.const : undefined;
    if (code) {
      want("openapi", `#/components/schemas/${name}`, name);
      if (!errorClasses.has(code)) errorClasses.set(code, name);
    }
  }
  const errorCodes = specs.openapi.components.schemas.ErrorCode.enum;

  // Messages.
  const messages = [];
  for (const [key, m] of Object.entries(specs.asyncapi.components.messages)) {
    const p = m.payload;
    const type = p.properties?.type?.const;
    if (type) messages.push({ key, type, name: `${key}Message`, payload: p, summary: m.summary ?? m.title ?? m.description });
  }

  // Render every class.
  const rendered = new Map();
  while (pending.length) {
    const { src, schema, name, pointer } = pending.shift();
    if (rendered.has(name)) continue;
    rendered.set(name, renderClass(src, schema, name, pointer));
  }
  const messageText = messages.map(({ key, name, payload, summary }) => {
    const t = renderClass("asyncapi", payload, name, `asyncapi:#/components/messages/${key}/payload`, "ServerMessage");
    while (pending.length) {
      const { src, schema, name: n, pointer } = pending.shift();
      if (!rendered.has(n)) rendered.set(n, renderClass(src, schema, n, pointer));
    }
    return doc("    ", summary) + t;
  });
  const unionText = unions.map(({ name, id, variants }) => {
    const names = variants.map((r) => r.split("/").pop());
    const statuses = variants.map((r) => deref("openapi", lookup("openapi", r)).properties?.status?.const);
    const hasStatus = statuses.every((s) => typeof s === "string");
    const count = (st) => statuses.filter((x) => x === st).length;
    let out = `    /// <summary>The answer of ${id}: one of ${names.join(", ")}${hasStatus ? " (by <c>status</c>)" : ""}.</summary>\n`;
    out += `    public partial class ${name} : JsonModel\n    {\n`;
    if (hasStatus) {
      out += `        /// <summary>one of ${[...new Set(statuses)].map((s) => JSON.stringify(s)).join(", ")}</summary>\n`;
      out += `        public string Status { get { return Get("status", Codecs.String); } }\n`;
    }
    names.forEach((n, i) => {
      const st = statuses[i];
      if (hasStatus && count(st) === 1) {
        out += `        /// <summary>This answer as ${n} when <c>status</c> is ${xml(lit(st))}, else null.</summary>\n`;
        out += `        public ${n} ${constName(st)} { get { return Status == ${lit(st)} ? As<${n}>() : null; } }\n`;
      }
      out += hasStatus
        ? `        /// <summary>This answer read as ${n} when <c>status</c> is ${xml(lit(st))}, else null.</summary>\n        public ${n} As${n}() { return Status == ${lit(st)} ? As<${n}>() : null; }\n`
        : `        /// <summary>This answer read as ${n}.</summary>\n        public ${n} As${n}() { return As<${n}>(); }\n`;
    });
    out += `        /// <summary>The variants.</summary>\n        public static readonly Type[] VariantTypes = { ${names.map((n) => `typeof(${n})`).join(", ")} };\n`;
    return out + "    }\n";
  });

  const header = (what) =>
    `// Generated by clients/csharp/tools/generate.mjs from ${what}.\n` +
    `// Do not edit: change the spec and run \`node clients/csharp/tools/generate.mjs\`;\n` +
    `// the NUnit suite fails while this file and the specs differ.\n`;
  const usings = "using System;\nusing System.Collections.Generic;\nusing System.Threading;\nusing System.Threading.Tasks;\n\nnamespace Matchmaking.Client\n{\n";
  const sortedClasses = [...rendered.keys()].sort().map((k) => rendered.get(k));
  const types = header("docs/openapi.yaml and docs/asyncapi.yaml") + "#pragma warning disable 1591\n" + usings + [...sortedClasses, ...unionText, ...messageText].join("\n") + "}\n";

  let client = header("docs/openapi.yaml (one method per operation)") + usings + "    public partial class MatchmakingClient\n    {\n";
  for (const o of operations) {
    const args = [...o.pathParams.map((p) => `string ${p}`)];
    if (o.request) args.push(o.bodyRequired ? `${o.request} body` : `${o.request} body = null`);
    for (const q of o.queryParams) args.push(`${q.cs} ${q.name} = null`);
    args.push("CancellationToken cancellationToken = default(CancellationToken)");
    const pathArgs = o.pathParams.length ? `new[] { ${o.pathParams.map((p) => `${lit(p)}, ${p}`).join(", ")} }` : "NoParams";
    const queryArgs = o.queryParams.length ? `new[] { ${o.queryParams.map((p) => `${lit(p.name)}, ${p.cs === "string" ? p.name : `Str(${p.name})`}`).join(", ")} }` : "NoParams";
    client += doc("        ", `${o.method} ${o.path}${o.scope ? ` (a token with ${o.scope})` : ""}: ${o.summary ?? ""}`);
    client += `        public Task<${o.result}> ${pascal(o.id)}Async(${args.join(", ")})\n        {\n`;
    client += `            return CallAsync<${o.result}>(${lit(o.id)}, ${pathArgs}, ${queryArgs}, ${o.request ? "body" : "null"}, cancellationToken);\n        }\n\n`;
  }
  client = client.replace(/\n\n$/, "\n") + "    }\n}\n";

  let events = header("docs/asyncapi.yaml (one event per server message)") + usings + "    public sealed partial class Connection\n    {\n";
  for (const m of messages) {
    events += doc("        ", `A new ${m.type} (${m.summary ?? ""})`);
    events += `        public event Action<${m.name}> ${constName(m.type)};\n`;
  }
  events += "\n        void RaiseTyped(ServerMessage msg)\n        {\n            switch (msg.Type)\n            {\n";
  for (const m of messages) {
    events += `                case ${lit(m.type)}:\n                {\n                    var h = ${constName(m.type)};\n                    if (h != null) h((${m.name})msg);\n                    break;\n                }\n`;
  }
  events += "            }\n        }\n    }\n}\n";

  let spec = header("docs/openapi.yaml and docs/asyncapi.yaml") + usings;
  spec += "    /// <summary>Every operation of docs/openapi.yaml, the error codes and the server message types.</summary>\n";
  spec += "    public static partial class Spec\n    {\n";
  spec += "        /// <summary>Every operation by operationId.</summary>\n";
  spec += "        public static readonly IDictionary<string, Operation> Operations = new Dictionary<string, Operation>\n        {\n";
  for (const o of operations) {
    const errs = o.errors.map((e) => `{ ${lit(e.code)}, ${e.status} }`).join(", ");
    spec += `            { ${lit(o.id)}, new Operation(${lit(o.id)}, ${lit(o.method)}, ${lit(o.path)}, ${o.scope ? lit(o.scope) : "null"}, ${o.request ? `typeof(${o.request})` : "null"}, typeof(${o.result}), ${o.successStatus}, new Dictionary<string, int> { ${errs} }) },\n`;
  }
  spec += "        };\n\n";
  spec += "        /// <summary>Every ErrorCode of docs/openapi.yaml (the stable <c>data.error</c>).</summary>\n";
  spec += `        public static readonly string[] ErrorCodes = { ${errorCodes.map(lit).join(", ")} };\n\n`;
  spec += "        /// <summary>The details class of each error code.</summary>\n";
  spec += "        public static readonly IDictionary<string, Type> ErrorDetails = new Dictionary<string, Type>\n        {\n";
  for (const code of [...errorClasses.keys()].sort()) spec += `            { ${lit(code)}, typeof(${errorClasses.get(code)}) },\n`;
  spec += "        };\n\n";
  spec += "        /// <summary>Every server message type of docs/asyncapi.yaml and its class.</summary>\n";
  spec += "        public static readonly IDictionary<string, Type> MessageTypes = new Dictionary<string, Type>\n        {\n";
  for (const m of messages) spec += `            { ${lit(m.type)}, typeof(${m.name}) },\n`;
  spec += "        };\n    }\n\n";
  spec += "    /// <summary>The error codes (<c>data.error</c>) as constants.</summary>\n    public static class ErrorCode\n    {\n";
  for (const c of errorCodes) spec += `        public const string ${constName(c)} = ${lit(c)};\n`;
  spec += "    }\n\n    /// <summary>The server message types as constants.</summary>\n    public static class MessageType\n    {\n";
  for (const m of messages) spec += `        public const string ${constName(m.type)} = ${lit(m.type)};\n`;
  spec += "    }\n}\n";
  return { types, client, spec, events };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const check = process.argv.includes("--check");
  const fresh = generate();
  let stale = 0;
  for (const [name, text] of Object.entries(fresh)) {
    let old = "";
    try {
      old = readFileSync(OUTPUTS[name], "utf8");
    } catch {}
    if (check) {
      if (old !== text) {
        console.error(`${OUTPUTS[name]} differs from what the specs give: run node clients/csharp/tools/generate.mjs`);
        stale++;
      }
    } else if (old !== text) {
      mkdirSync(here("../Runtime/Generated"), { recursive: true });
      writeFileSync(OUTPUTS[name], text);
      console.error(`wrote ${OUTPUTS[name]}`);
    }
  }
  process.exit(stale ? 1 : 0);
}
