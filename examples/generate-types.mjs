/**
 * Generates planfold-rpc.d.ts, the TypeScript types of `planfold serve`, from
 * its OpenRPC document with json-schema-to-typescript (pinned in
 * package-lock.json: `npm ci` here first).
 *
 *   node generate-types.mjs [OPENRPC_JSON [OUT_D_TS]]
 *
 * Defaults: ../specs/rpc.openrpc.json and planfold-rpc.d.ts beside this file.
 * `make diagrams` runs it. Every schema of the document's components becomes
 * an exported type under its own name; each method's by-name params become
 * `<Method>Params` (session/open: SessionOpenParams); `PlanfoldMethods` maps
 * every method name to its params and result, and `RpcErrorCode` lists the
 * error codes. The header records the SHA-256 of the document the types were
 * generated from, so a check without Node can tell they are stale.
 */

import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const [source = join(here, "..", "specs", "rpc.openrpc.json"), target = join(here, "planfold-rpc.d.ts")] =
  process.argv.slice(2);

const text = readFileSync(source, "utf8");
const digest = createHash("sha256").update(text, "utf8").digest("hex");
const document = JSON.parse(text);

/** `#/components/schemas/X` → `#/$defs/X`, everywhere in a value. */
function moved(value) {
  if (Array.isArray(value)) return value.map(moved);
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = key === "$ref" && typeof item === "string" ? item.replace("#/components/schemas/", "#/$defs/") : moved(item);
  }
  return out;
}

/** session/open → SessionOpen; goal/should_continue → GoalShouldContinue. */
function pascal(name) {
  return name
    .split(/[/_.]/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("");
}

const defs = moved(document.components.schemas);
const methods = {};
for (const method of document.methods) {
  const paramsName = `${pascal(method.name)}Params`;
  if (paramsName in defs) throw new Error(`${paramsName} is already a schema of the document`);
  const properties = {};
  for (const param of method.params) properties[param.name] = moved(param.schema);
  defs[paramsName] = {
    title: paramsName,
    description: `The params of ${method.name}: ${method.description}`,
    type: "object",
    properties,
    required: method.params.filter((param) => param.required).map((param) => param.name),
    additionalProperties: false,
  };
  methods[method.name] = {
    type: "object",
    properties: { params: { $ref: `#/$defs/${paramsName}` }, result: moved(method.result.schema) },
    required: ["params", "result"],
    additionalProperties: false,
  };
}
for (const name of ["PlanfoldMethods", "RpcErrorCode"]) {
  if (name in defs) throw new Error(`${name} is already a schema of the document`);
}
const errors = Object.entries(document.components.errors);
defs.RpcErrorCode = {
  title: "RpcErrorCode",
  description: errors.map(([name, error]) => `${error.code} ${name}: ${error.message}`).join("\n"),
  type: "integer",
  enum: errors.map(([, error]) => error.code),
};

const root = {
  title: "PlanfoldMethods",
  description: `Every method of ${document.info.title} ${document.info.version}: its params and its result.`,
  type: "object",
  properties: methods,
  required: Object.keys(methods),
  additionalProperties: false,
  $defs: defs,
};

const banner = [
  "/* eslint-disable */",
  "/**",
  ` * The types of ${document.info.title} ${document.info.version}, generated from its OpenRPC document`,
  " * by examples/generate-types.mjs with json-schema-to-typescript: do not edit by",
  " * hand; `make diagrams` regenerates this file.",
  " *",
  ` * openrpc-sha256: ${digest}`,
  " */",
].join("\n");

const types = await compile(root, "PlanfoldMethods", {
  bannerComment: banner,
  unreachableDefinitions: true,
  unknownAny: true,
  format: true,
  style: { printWidth: 120 },
});
writeFileSync(target, types);
