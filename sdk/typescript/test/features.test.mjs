// Logs and metrics, hibernate and resume, runtimes, previews, snapshots,
// fork and volumes, against real gVisor sandboxes.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Sandbox, SbxClient, ConflictError } from "../dist/esm/index.js";
import { needServer, cleanup, create, until, suffix } from "./helpers.mjs";

const server = needServer();
after(cleanup);

test("logs (a page, and followed) and metrics", async () => {
  const sb = await create();
  const page = await sb.logs({ limit: 100 });
  assert.ok(page.items.length > 0, JSON.stringify(page));
  const first = [];
  for await (const line of sb.followLogs()) {
    first.push(line);
    if (first.length === page.items.length) break;
  }
  assert.deepEqual(first.map((l) => l.line), page.items.map((l) => l.line));
  const m = await sb.metrics();
  assert.ok(m.memoryBytes > 0 && m.processes > 0, JSON.stringify(m));
});

test("hibernate and resume keep the sandbox's files", async () => {
  const sb = await create();
  await sb.files.write("/workspace/kept", "kept");
  await sb.hibernate();
  assert.equal(sb.state, "paused");
  assert.ok(sb.data.hibernated);
  await sb.resume({ timeout: 600 });
  assert.equal(sb.state, "running");
  assert.equal(await sb.files.read("/workspace/kept"), "kept");
});

test("a runtime: start, pause, resume, keepalive, reset", async () => {
  const c = new SbxClient(server);
  const [rt0] = (await c.listRuntimes("default", "default")).items;
  assert.ok(rt0, "the default project's runtime");
  let rt = await c.startRuntime("default", "default", rt0.id);
  try {
    assert.equal(rt.status, "running");
    const sb = await Sandbox.connect(rt.sandbox_id);
    await sb.files.write("/workspace/state", "kept");
    rt = await c.pauseRuntime("default", "default", rt0.id);
    assert.equal(rt.status, "paused");
    rt = await c.resumeRuntime("default", "default", rt0.id);
    assert.equal(rt.status, "running");
    assert.equal(await (await Sandbox.connect(rt.sandbox_id)).files.read("/workspace/state"), "kept");
    rt = await c.keepaliveRuntime("default", "default", rt0.id, 1800);
    assert.equal((await c.getRuntime("default", "default", rt0.id)).status, "running");
    await assert.rejects(c.startRuntime("default", "default", rt0.id), ConflictError);
  } finally {
    rt = await c.resetRuntime("default", "default", rt0.id);
  }
  assert.equal(rt.status, "idle");
});

/** startEcho starts sbx's echo server on port in sb and waits until it answers. */
async function startEcho(sb, port) {
  await sb.commands.start(["/.sbx/sbx", "agent", "echo", String(port)], { tag: "echo", discardOutput: true });
  const res = await sb.commands.run(`for i in $(seq 100); do curl -sf localhost:${port}/ >/dev/null && exit 0; sleep 0.1; done; exit 1`);
  assert.equal(res.exitCode, 0, "the echo server answers");
}

/** getVia GETs a preview URL, connecting to serve whatever host it names (as wildcard DNS would). */
function getVia(rawURL, headers = {}) {
  const u = new URL(rawURL), s = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.get({ host: s.hostname, port: s.port, path: u.pathname + u.search, headers: { Host: u.host, ...headers } }, (resp) => {
      let body = "";
      resp.setEncoding("utf8");
      resp.on("data", (d) => (body += d));
      resp.on("end", () => resolve({ status: resp.statusCode, body, headers: resp.headers }));
    });
    req.on("error", reject);
  });
}

test("previews: a public preview URL fetched, a private one opened by a preview link", async () => {
  const pub = await create("base", { ports: [8080], preview: { access: "public" } });
  await startEcho(pub, 8080);
  const direct = await fetch(pub.getPreviewPathUrl(8080, "/echo"));
  assert.equal(direct.status, 200);
  assert.equal((await direct.json()).path, "/echo");
  assert.equal(pub.data.ports[0].url, pub.getPreviewUrl(8080));
  const byHost = await getVia(pub.getPreviewUrl(8080) + "/echo");
  assert.equal(byHost.status, 200, byHost.body);
  assert.equal(JSON.parse(byHost.body).port, 8080);

  const priv = await create();
  await startEcho(priv, 3000);
  assert.notEqual((await fetch(priv.getPreviewPathUrl(3000, "/echo"))).status, 200);
  const link = await priv.createPreviewLink(3000, { ttl: 600 });
  assert.match(link.url, /sbx_token=/);
  const token = new URL(link.url).searchParams.get("sbx_token");
  const viaLink = await fetch(priv.getPreviewPathUrl(3000, "/echo"), { headers: { "X-Sbx-Traffic-Token": token } });
  assert.equal(viaLink.status, 200);
  const byLinkURL = await getVia(link.url);
  assert.ok(byLinkURL.status === 200 || (byLinkURL.status >= 300 && byLinkURL.status < 400), `${byLinkURL.status} ${byLinkURL.body}`);
  const links = await priv.listPreviewLinks();
  assert.deepEqual(links.map((l) => l.id), [link.id]);
  assert.equal(links[0].url ?? "", "");
  await priv.revokePreviewLink(link.id);
  assert.notEqual((await fetch(priv.getPreviewPathUrl(3000, "/echo"), { headers: { "X-Sbx-Traffic-Token": token } })).status, 200);
  const viaTraffic = await fetch(priv.getPreviewPathUrl(3000, "/echo"), { headers: { "X-Sbx-Traffic-Token": priv.trafficToken } });
  assert.equal(viaTraffic.status, 200);
});

test("snapshot, create from it, fork", async () => {
  const c = new SbxClient(server);
  const sb = await create();
  await sb.files.write("/workspace/marker", "from the source");
  await sb.commands.start("sleep 600", { tag: "survivor" });
  const snap = await sb.snapshot({ name: "ts-" + suffix(), metadata: { by: "ts" } });
  assert.equal(snap.state, "ready");
  assert.equal((await c.getSnapshot(snap.id)).id, snap.id);
  assert.ok((await c.listSnapshots({ sandboxId: sb.id })).items.some((s) => s.id === snap.id));
  const restored = await create("", { snapshotId: snap.id });
  assert.equal(restored.data.snapshotID, snap.id);
  assert.equal(await restored.files.read("/workspace/marker"), "from the source");
  assert.ok((await restored.commands.get("survivor")).running, "the snapshot's processes go on");
  await c.deleteSnapshot(snap.id);

  const { children, errors } = await sb.fork(1);
  try {
    assert.deepEqual(errors, []);
    assert.equal(children.length, 1);
    assert.equal(children[0].data.forkedFrom, sb.id);
    assert.equal(await children[0].files.read("/workspace/marker"), "from the source");
  } finally {
    for (const ch of children) await ch.delete().catch(() => {});
  }
});

test("a volume mounted into a sandbox", async () => {
  const c = new SbxClient(server);
  const name = "ts-vol-" + suffix();
  const vol = await c.createVolume(name, 64);
  try {
    assert.equal(vol.name, name);
    await c.writeVolumeFile(name, "/seed.txt", "seeded");
    const sb = await create("base", { volumes: [{ name, path: "/mnt" }] });
    assert.equal(await sb.files.read("/mnt/seed.txt"), "seeded");
    await sb.files.write("/mnt/out.txt", "written in the sandbox");
    await sb.delete();
    assert.equal(new TextDecoder().decode(await c.readVolumeFile(name, "/out.txt")), "written in the sandbox");
    assert.deepEqual((await c.listVolumeFiles(name, "/")).items.map((e) => e.name).sort(), ["out.txt", "seed.txt"]);
    assert.ok((await c.listVolumes()).items.some((v) => v.name === name));
    assert.equal((await c.getVolume(name)).id, vol.id);
  } finally {
    await c.deleteVolume(vol.id).catch(() => {});
  }
});
