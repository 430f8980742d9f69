#!/usr/bin/env node
// generate.mjs reads sbx's OpenAPI document (../../httpapi/openapi.json) and
// writes src/generated.ts: every schema of components.schemas as a
// TypeScript type, and the table of every operation (operationId → method,
// path, path, query and header parameters, request body, response), which
// SbxClient.call reaches. Node only, no dependencies.
//
//   node scripts/generate.mjs            writes src/generated.ts
//   node scripts/generate.mjs --check    fails when src/generated.ts differs
//
// generate(doc) is exported for the test that keeps src/generated.ts in
// step with the document.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
export const documentPath = join(here, "..", "..", "..", "httpapi", "openapi.json");
export const outputPath = join(here, "..", "src", "generated.ts");

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (name) => (identifier.test(name) ? name : JSON.stringify(name));
const refName = (ref) => {
  const prefix = "#/components/schemas/";
  if (!ref.startsWith(prefix)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(prefix.length);
};

/** comment renders a description as a JSDoc block at indent. */
function comment(text, indent) {
  if (!text) return "";
  const lines = String(text).replace(/\*\//g, "*\\/").split("\n");
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

/** type renders a schema as a TypeScript type expression. */
function type(schema, indent) {
  if (!schema || Object.keys(schema).length === 0) return "unknown";
  if (schema.$ref) return refName(schema.$ref);
  if (schema.enum) {
    return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  }
  switch (schema.type) {
    case "string":
      return schema.format === "binary" ? "Blob" : "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "array": {
      const item = type(schema.items, indent);
      return /[ |]/.test(item) && !item.startsWith("{") ? `(${item})[]` : `${item}[]`;
    }
    case "object":
    case undefined: {
      if (schema.properties) return objectType(schema, indent);
      const extra = schema.additionalProperties;
      if (extra && typeof extra === "object") return `Record<string, ${type(extra, indent)}>`;
      return "Record<string, unknown>";
    }
    default:
      throw new Error(`unsupported schema type ${JSON.stringify(schema.type)}`);
  }
}

/** objectType renders an object schema with properties as an inline type. */
function objectType(schema, indent) {
  const required = new Set(schema.required ?? []);
  const inner = indent + "  ";
  let out = "{\n";
  for (const name of Object.keys(schema.properties).sort()) {
    const prop = schema.properties[name];
    out += comment(prop.description, inner);
    out += `${inner}${key(name)}${required.has(name) ? "" : "?"}: ${type(prop, inner)};\n`;
  }
  const extra = schema.additionalProperties;
  if (extra && typeof extra === "object") out += `${inner}[key: string]: ${type(extra, inner)};\n`;
  return out + `${indent}}`;
}

/** declaration renders one named schema. */
function declaration(name, schema) {
  let out = comment(schema.description, "");
  if ((schema.type === "object" || schema.type === undefined) && schema.properties) {
    out += `export interface ${name} ${objectType(schema, "")}\n`;
  } else {
    out += `export type ${name} = ${type(schema, "")};\n`;
  }
  return out;
}

const methods = ["get", "put", "post", "delete", "patch", "head", "options"];

/** bodyOf describes an operation's request body: its media type and schema. */
function bodyOf(op) {
  const content = op.requestBody?.content;
  if (!content) return null;
  const [mediaType, media] = Object.entries(content)[0];
  const schema = media.schema ?? {};
  return { mediaType, required: !!op.requestBody.required, schema: schema.$ref ? refName(schema.$ref) : null, tsType: mediaType === "application/json" ? type(schema, "    ") : mediaType === "multipart/form-data" ? "FormData" : "BodyInit" };
}

/** responseOf describes an operation's success answer. */
function responseOf(op) {
  for (const [code, response] of Object.entries(op.responses ?? {})) {
    if (!/^2/.test(code)) continue;
    const content = response.content;
    if (!content) return { status: Number(code), mediaType: null, schema: null, tsType: "void" };
    const [mediaType, media] = Object.entries(content)[0];
    const schema = media.schema ?? {};
    const json = mediaType === "application/json";
    return { status: Number(code), mediaType, schema: schema.$ref ? refName(schema.$ref) : null, tsType: json ? type(schema, "    ") : "Response" };
  }
  return { status: 200, mediaType: null, schema: null, tsType: "void" };
}

/** paramsType renders the parameters of one location as an object type. */
function paramsType(params, indent) {
  if (params.length === 0) return "Record<string, never>";
  const inner = indent + "  ";
  let out = "{\n";
  for (const p of params) {
    out += comment(p.description, inner);
    out += `${inner}${key(p.name)}${p.required ? "" : "?"}: ${type(p.schema ?? {}, inner)};\n`;
  }
  return out + `${indent}}`;
}

/** generate renders the whole of src/generated.ts from the document. */
export function generate(doc) {
  const schemas = doc.components?.schemas ?? {};
  let out = `// Code generated by scripts/generate.mjs from httpapi/openapi.json (${doc.info?.title ?? "sbx"} ${doc.info?.version ?? ""}); DO NOT EDIT.
// Regenerate with \`npm run generate\`; the tests fail when this file lags the document.
/* eslint-disable */

`;
  for (const name of Object.keys(schemas).sort()) out += declaration(name, schemas[name]) + "\n";

  const ops = [];
  for (const path of Object.keys(doc.paths ?? {}).sort()) {
    const item = doc.paths[path];
    for (const method of methods) {
      const op = item[method];
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      ops.push({ id: op.operationId, method: method.toUpperCase(), path, op, params, body: bodyOf(op), response: responseOf(op) });
    }
  }
  ops.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

  out += `/** How an operation's request body travels. */
export type BodyMediaType = "application/json" | "application/octet-stream" | "application/gzip" | "multipart/form-data";

/** One operation of the API: what SbxClient.call needs to send it. */
export interface OperationSpec {
  readonly method: "GET" | "PUT" | "POST" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS";
  readonly path: string;
  readonly pathParams: readonly string[];
  readonly queryParams: readonly string[];
  readonly headerParams: readonly string[];
  /** The request body's media type, or null when it takes none. */
  readonly bodyType: string | null;
  /** The components.schemas name of the JSON or multipart body, if any. */
  readonly bodySchema: string | null;
  /** The success answer's media type, or null when it has no body. */
  readonly responseType: string | null;
  /** The components.schemas name of the success answer, if any. */
  readonly responseSchema: string | null;
  readonly summary: string;
}

/** Every operation of the document, by operationId. */
export const operations = {
`;
  for (const o of ops) {
    const names = (loc) => JSON.stringify(o.params.filter((p) => p.in === loc).map((p) => p.name));
    out += `  ${key(o.id)}: { method: ${JSON.stringify(o.method)}, path: ${JSON.stringify(o.path)}, pathParams: ${names("path")}, queryParams: ${names("query")}, headerParams: ${names("header")}, bodyType: ${JSON.stringify(o.body?.mediaType ?? null)}, bodySchema: ${JSON.stringify(o.body?.schema ?? null)}, responseType: ${JSON.stringify(o.response.mediaType)}, responseSchema: ${JSON.stringify(o.response.schema)}, summary: ${JSON.stringify(o.op.summary ?? "")} },\n`;
  }
  out += `} as const satisfies Record<string, OperationSpec>;

/** The operationId of every operation. */
export type OperationId = keyof typeof operations;

/**
 * The typed shape of each operation: its path, query and header parameters,
 * its body and its answer (a Response, its body unread, for answers that are
 * not JSON: NDJSON streams, files, HTML, images).
 */
export interface Operations {
`;
  for (const o of ops) {
    const at = (loc) => o.params.filter((p) => p.in === loc);
    out += comment(`${o.method} ${o.path}${o.op.summary ? ": " + o.op.summary : ""}`, "  ");
    out += `  ${key(o.id)}: {\n`;
    out += `    path: ${paramsType(at("path"), "    ")};\n`;
    out += `    query: ${paramsType(at("query"), "    ")};\n`;
    out += `    headers: ${paramsType(at("header"), "    ")};\n`;
    out += `    body: ${o.body ? o.body.tsType : "never"};\n`;
    out += `    bodyRequired: ${o.body ? o.body.required : false};\n`;
    out += `    response: ${o.response.tsType};\n`;
    out += `  };\n`;
  }
  out += `}\n`;
  return out;
}

/** readDocument reads the OpenAPI document next to this package. */
export function readDocument(path = documentPath) {
  return JSON.parse(readFileSync(path, "utf8"));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = generate(readDocument());
  if (process.argv.includes("--check")) {
    let current = "";
    try {
      current = readFileSync(outputPath, "utf8");
    } catch {}
    if (current !== text) {
      console.error(`${outputPath} lags ${documentPath}: run npm run generate`);
      process.exit(1);
    }
  } else {
    writeFileSync(outputPath, text);
    console.log(`wrote ${outputPath}`);
  }
}
