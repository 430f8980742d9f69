// The SDK keeps step with the OpenAPI document: src/generated.ts is what
// scripts/generate.mjs makes of it now, and every operation of the
// document is reachable through SbxClient.call. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { generate, readDocument, outputPath } from "../scripts/generate.mjs";
import * as sdk from "../dist/esm/index.js";

const doc = readDocument();

test("src/generated.ts is what the OpenAPI document generates (run npm run generate when this fails)", () => {
  const want = generate(doc);
  const got = readFileSync(outputPath, "utf8");
  if (got !== want) {
    const a = got.split("\n"), b = want.split("\n");
    const i = a.findIndex((line, n) => line !== b[n]);
    assert.fail(`src/generated.ts lags httpapi/openapi.json from line ${i + 1}:\n  have: ${a[i]}\n  want: ${b[i]}\nrun: npm run generate`);
  }
});

test("every operation and schema of the document is in the SDK", () => {
  const ts = readFileSync(outputPath, "utf8");
  for (const name of Object.keys(doc.components.schemas)) {
    assert.match(ts, new RegExp(`export (interface|type) ${name}\\b`), `schema ${name}`);
  }
  let n = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== "object" || !op.operationId) continue;
      n++;
      const spec = sdk.operations[op.operationId];
      assert.ok(spec, `operation ${op.operationId} (${method.toUpperCase()} ${path})`);
      assert.equal(spec.method, method.toUpperCase());
      assert.equal(spec.path, path);
      for (const p of op.parameters ?? []) {
        const list = { path: spec.pathParams, query: spec.queryParams, header: spec.headerParams }[p.in];
        assert.ok(list.includes(p.name), `${op.operationId}: ${p.in} parameter ${p.name}`);
      }
      for (const field of Object.keys(doc.components.schemas[spec.bodySchema]?.properties ?? {})) {
        assert.match(ts, new RegExp(`\\b${field}\\??:`), `${op.operationId}: body field ${field}`);
      }
    }
  }
  assert.equal(Object.keys(sdk.operations).length, n);
});

test("call builds each request from the operation table", async () => {
  const seen = [];
  const fake = async (url, init) => {
    seen.push({ url: String(url), method: init.method, headers: init.headers, body: init.body });
    return new Response(JSON.stringify({ items: [] }), { status: 200, headers: { "Content-Type": "application/json" } });
  };
  const c = new sdk.SbxClient({ url: "http://sbx.test/", apiKey: "k", fetch: fake });
  await c.call("sandboxLogs", { path: { id: "a b" }, query: { limit: 5, cursor: "c" } });
  await c.call("listSandboxes", { query: { state: ["running", "paused"] } });
  await c.call("createVolume", { body: { name: "v", sizeMB: 64 } });
  assert.equal(seen[0].url, "http://sbx.test/api/v1/sandboxes/a%20b/logs?limit=5&cursor=c");
  assert.equal(seen[0].headers.Authorization, "Bearer k");
  assert.equal(seen[1].url, "http://sbx.test/api/v1/sandboxes?state=running&state=paused");
  assert.equal(seen[2].method, "POST");
  assert.equal(seen[2].body, '{"name":"v","sizeMB":64}');
  await assert.rejects(c.call("getSandbox", {}), /path parameter id is missing/);
});

test("errors map to their classes", async () => {
  const answer = (status, body) => async () => new Response(body, { status });
  const cases = [
    [404, { code: 404, type: "not_found", detail: "sandbox x not found", errors: [] }, sdk.NotFoundError],
    [409, { code: 409, type: "conflict", detail: "running", errors: [] }, sdk.ConflictError],
    [402, { code: 402, type: "insufficient_credits", detail: "no credits", errors: [] }, sdk.InsufficientCreditsError],
    [403, { code: 403, type: "kyc_required", detail: "verify", errors: [] }, sdk.KycRequiredError],
    [403, { code: 403, type: "plan_limit_exceeded", detail: "plan", errors: [] }, sdk.PlanLimitExceededError],
    [400, { code: 400, type: "invalid", detail: "bad", errors: [{ field: "timeout", message: "too big" }] }, sdk.InvalidError],
    [503, { code: 503, type: "warm_pool_unavailable", detail: "none", errors: [] }, sdk.WarmPoolUnavailableError],
  ];
  for (const [status, body, cls] of cases) {
    const c = new sdk.SbxClient({ url: "http://sbx.test", fetch: answer(status, JSON.stringify(body)) });
    const err = await c.getSandbox("x").then(() => null, (e) => e);
    assert.ok(err instanceof cls && err instanceof sdk.SbxError, `${body.type}: ${err}`);
    assert.equal(err.status, status);
    assert.equal(err.type, body.type);
    assert.equal(err.detail, body.detail);
    assert.deepEqual(err.errors, body.errors);
  }
  assert.ok(new sdk.KycRequiredError(403, "kyc_required", "x") instanceof sdk.ForbiddenError);
  const plain = new sdk.SbxClient({ url: "http://sbx.test", fetch: answer(502, "bad gateway") });
  const err = await plain.getSandbox("x").catch((e) => e);
  assert.ok(err instanceof sdk.ProviderError && err.detail.includes("bad gateway"));
});

test("create sends an Idempotency-Key and retries once, with it, when the connection fails", async () => {
  const keys = [];
  let tries = 0;
  const flaky = async (url, init) => {
    keys.push(init.headers["Idempotency-Key"]);
    if (++tries === 1) throw new TypeError("fetch failed");
    return new Response(JSON.stringify({ id: "u", sandboxID: "s", state: "running" }), { status: 201 });
  };
  const sb = await sdk.Sandbox.create("base", { url: "http://sbx.test", fetch: flaky });
  assert.equal(sb.sandboxId, "s");
  assert.equal(keys.length, 2);
  assert.ok(keys[0] && keys[0] === keys[1]);
  let n = 0;
  const down = async () => { n++; throw new TypeError("fetch failed"); };
  await assert.rejects(sdk.Sandbox.create("base", { url: "http://sbx.test", fetch: down }), TypeError);
  assert.equal(n, 2);
});

test("configuration comes from SBX_URL and SBX_API_KEY", () => {
  const saved = { url: process.env.SBX_URL, key: process.env.SBX_API_KEY };
  process.env.SBX_URL = "http://env.test:1/";
  process.env.SBX_API_KEY = "envkey";
  try {
    const c = new sdk.SbxClient();
    assert.equal(c.url, "http://env.test:1");
    assert.equal(c.apiKey, "envkey");
    assert.equal(new sdk.SbxClient({ url: "http://o", apiKey: "o" }).apiKey, "o");
  } finally {
    for (const [k, v] of [["SBX_URL", saved.url], ["SBX_API_KEY", saved.key]]) {
      if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
  }
});

test("the CommonJS build loads with require", () => {
  const require = createRequire(import.meta.url);
  const cjs = require("@sbx/sdk");
  assert.equal(typeof cjs.Sandbox.create, "function");
  assert.equal(typeof cjs.NotFoundError, "function");
  assert.equal(Object.keys(cjs.operations).length, Object.keys(sdk.operations).length);
});

test("a PTY without a WebSocket fails with a clear error", async () => {
  if (globalThis.WebSocket) return; // Node ≥ 22 has one
  const c = new sdk.SbxClient({ url: "http://sbx.test", fetch: async () => { throw new Error("no request expected"); } });
  const pty = new sdk.Pty(c, "x");
  await assert.rejects(pty.create(), /needs a WebSocket.*pass one/);
});
