// Reference 004's lifecycle exactly as written, and the error classes of
// the API's refusals (404, 409, 402, 403), against a real sbx serve.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Sandbox, SbxClient, SbxError, NotFoundError, ConflictError, InsufficientCreditsError, ForbiddenError, KycRequiredError, PlanLimitExceededError, InvalidError } from "../dist/esm/index.js";
import { needServer, cleanup, create, suffix } from "./helpers.mjs";

needServer(); // Sandbox.create below reads SBX_URL and SBX_API_KEY itself
after(cleanup);

test("the lifecycle of reference 004, exactly as written", async () => {
  const sandbox = await Sandbox.create("base", { timeout: 1800, waitReady: true, envVars: { FOO: "bar" }, metadata: { purpose: "demo" } });
  try {
    assert.equal(sandbox.state, "running");
    assert.deepEqual(sandbox.data.metadata, { purpose: "demo" });
    assert.deepEqual(sandbox.data.envVarNames, ["FOO"]);
    assert.equal(sandbox.data.timeout, 1800);
    assert.equal((await sandbox.commands.run("echo $FOO")).stdout, "bar\n");
    await sandbox.connect({ timeout: 1800 });
    assert.equal(sandbox.state, "running");
    const reconnected = await Sandbox.connect(sandbox.sandboxId, { timeout: 1800 });
    assert.equal(reconnected.id, sandbox.id);
    assert.equal(reconnected.sandboxId, sandbox.sandboxId);
    await sandbox.setTimeout(3600); await sandbox.refresh(); await sandbox.pause(); await sandbox.delete();
    assert.equal(sandbox.state, "killed");
    assert.equal((await Sandbox.getInfo(sandbox.sandboxId)).end_reason, "deleted");
  } catch (err) {
    await sandbox.delete().catch(() => {});
    throw err;
  }
});

test("setTimeout, refresh, pause, connect (which resumes), list and getInfo update the handle", async () => {
  const sb = await create("base", { metadata: { suite: "ts-" + suffix() } });
  await sb.setTimeout(3600);
  assert.equal(sb.data.timeout, 3600);
  await sb.refresh(60);
  await sb.pause();
  assert.equal(sb.state, "paused");
  await sb.connect();
  assert.equal(sb.state, "running");
  const page = await Sandbox.list({ metadata: sb.data.metadata, states: ["running"] });
  assert.deepEqual(page.items.map((s) => s.id), [sb.id]);
  assert.equal((await sb.getInfo()).id, sb.id);
  assert.ok(await sb.isRunning());
});

test("404: a missing sandbox is a NotFoundError with the server's detail", async () => {
  const err = await Sandbox.connect("sbx-missing-" + suffix()).catch((e) => e);
  assert.ok(err instanceof NotFoundError, String(err));
  assert.ok(err instanceof SbxError);
  assert.equal(err.status, 404);
  assert.equal(err.type, "not_found");
  assert.match(err.detail, /not found/);
  assert.ok(await Sandbox.getInfo("nope-" + suffix()).catch((e) => e instanceof NotFoundError));
});

test("409: resuming a running sandbox and pausing a paused one are ConflictErrors", async () => {
  const sb = await create();
  const running = await sb.resume().catch((e) => e);
  assert.ok(running instanceof ConflictError, String(running));
  assert.equal(running.status, 409);
  assert.match(running.detail, /running/);
  await sb.pause();
  const paused = await sb.pause().catch((e) => e);
  assert.ok(paused instanceof ConflictError, String(paused));
  await sb.resume();
  assert.equal(sb.state, "running");
});

test("400: a bad request is an InvalidError naming the field", async () => {
  const err = await Sandbox.create("base", { timeout: 10 ** 9 }).catch((e) => e);
  assert.ok(err instanceof InvalidError || err instanceof SbxError, String(err));
  assert.equal(err.status, 400);
  const unknown = await Sandbox.create("base", { provider: "nope" }).catch((e) => e);
  assert.ok(unknown instanceof InvalidError && unknown.detail.includes(`provider "nope" is not one of this server's`), String(unknown));
});

test("402, 403: an org without credits, an unverified org, a plan limit and an admin route", async () => {
  const admin = new SbxClient(needServer());
  const org = async ({ name, ...rest }) => (await admin.call("createOrg", { body: { name: `ts-${name}-${suffix()}`, ...rest } })).secret;

  const broke = await org({ name: "broke", kyc_status: "verified" });
  const noCredits = await Sandbox.create("base", { apiKey: broke }).catch((e) => e);
  assert.ok(noCredits instanceof InsufficientCreditsError, String(noCredits));
  assert.equal(noCredits.status, 402);
  assert.equal(noCredits.type, "insufficient_credits");
  assert.match(noCredits.detail, /credits/);

  const unverified = await org({ name: "unverified", credits: "100" });
  const kyc = await Sandbox.create("base", { apiKey: unverified }).catch((e) => e);
  assert.ok(kyc instanceof KycRequiredError && kyc instanceof ForbiddenError, String(kyc));
  assert.equal(kyc.status, 403);
  assert.equal(kyc.type, "kyc_required");

  const small = await org({ name: "small", kyc_status: "verified", credits: "100", plan: { max_memory_mb: 64 } });
  const plan = await Sandbox.create("base", { apiKey: small }).catch((e) => e);
  assert.ok(plan instanceof PlanLimitExceededError && plan instanceof ForbiddenError, String(plan));
  assert.equal(plan.type, "plan_limit_exceeded");

  const forbidden = await new SbxClient({ url: admin.url, apiKey: small }).call("listOrgs", {}).catch((e) => e);
  assert.ok(forbidden instanceof ForbiddenError, String(forbidden));
  assert.equal(forbidden.type, "forbidden");
  assert.equal(forbidden.status, 403);
  assert.match(forbidden.detail, /operator/);
});
