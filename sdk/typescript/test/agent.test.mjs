// Every command, file and PTY operation in a real gVisor sandbox.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { NotFoundError, SandboxStoppedError, DisconnectedError, Sandbox } from "../dist/esm/index.js";
import { needServer, cleanup, create, until, WebSocket } from "./helpers.mjs";

needServer();
let sb;
before(async () => { sb = await create(); });
after(cleanup);

test("commands: run with streaming callbacks, exit codes, env, cwd, user, argv, timeout", async () => {
  const out = [], err = [];
  const res = await sb.commands.run("echo one; echo two >&2; echo three; exit 3", { onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) });
  assert.equal(res.exitCode, 3);
  assert.equal(res.stdout, "one\nthree\n");
  assert.equal(res.stderr, "two\n");
  assert.equal(out.join(""), "one\nthree\n");
  assert.equal(err.join(""), "two\n");
  assert.ok(res.pid > 0);
  const env = await sb.commands.run("echo $A:$PWD:$(id -un)", { envs: { A: "x" }, cwd: "/tmp", user: "root" });
  assert.equal(env.stdout, "x:/tmp:root\n");
  const argv = await sb.commands.run(["printf", "%s|", "a b", "c"]);
  assert.equal(argv.stdout, "a b|c|");
  const timed = await sb.commands.run("sleep 30", { timeout: 1 });
  assert.equal(timed.exitCode, -1);
  assert.ok(timed.signal || timed.error, JSON.stringify(timed));
  const discarded = await sb.commands.run("echo gone", { discardOutput: true });
  assert.equal(discarded.stdout, "");
});

test("commands: background, stdin, list, get, connect by PID and by tag, signal, kill", async () => {
  const h = await sb.commands.run("cat; echo done", { background: true, stdin: true, tag: "cat" });
  assert.ok(h.pid > 0);
  assert.equal(h.tag, "cat");
  await h.sendStdin("hello ");
  await sb.commands.sendStdin("cat", new TextEncoder().encode("world\n"));
  const byTag = await sb.commands.connect("cat");
  await sb.commands.closeStdin("cat");
  const res = await h.wait();
  assert.equal(res.exitCode, 0);
  assert.equal(res.stdout, "hello world\ndone\n");
  assert.equal((await byTag.wait()).stdout, "hello world\ndone\n");

  const sleeper = await sb.commands.start("trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.1; done", { tag: "sleeper" });
  await until("the trap is set", () => sleeper.stdout.includes("ready"));
  const list = await sb.commands.list();
  assert.ok(list.some((c) => c.pid === sleeper.pid && c.running && c.tag === "sleeper"), JSON.stringify(list));
  assert.equal((await sb.commands.get("sleeper")).pid, sleeper.pid);
  const byPid = await sb.commands.connect(sleeper.pid);
  await sleeper.signal("TERM");
  const ended = await byPid.wait();
  assert.equal(ended.exitCode, 7);
  assert.match(ended.stdout, /got TERM/);

  const killed = await sb.commands.start("sleep 600", { tag: "victim" });
  await sb.commands.kill("victim");
  const k = await killed.wait();
  assert.equal(k.exitCode, -1);
  assert.equal(k.signal, "KILL");

  const other = await sb.commands.start("sleep 600");
  other.disconnect();
  await assert.rejects(other.wait(), DisconnectedError);
  assert.ok((await sb.commands.get(other.pid)).running);
  await other.kill();
  await until("the killed command ends", async () => !(await sb.commands.get(other.pid)).running);
  await assert.rejects(sb.commands.get("no-such-tag"), NotFoundError);
});

test("files: text, bytes, streams, multipart, list, stat, mkdir, rename, remove", async () => {
  const info = await sb.files.write("notes/a.txt", "héllo");
  assert.equal(info.path, "/workspace/notes/a.txt");
  assert.equal(info.size, 6);
  assert.equal(await sb.files.read("/workspace/notes/a.txt"), "héllo");
  const bytes = new Uint8Array(256).map((_, i) => i);
  await sb.files.write("/tmp/bin", bytes, { user: "root" });
  assert.deepEqual(await sb.files.readBytes("/tmp/bin"), bytes);
  assert.equal((await sb.files.stat("/tmp/bin")).size, 256);
  assert.equal((await sb.commands.run("stat -c %U /tmp/bin")).stdout, "root\n");
  assert.equal((await sb.files.write("/tmp/run.sh", "#!/bin/sh\necho ran\n", { mode: "755" })).mode, "0755");
  assert.equal((await sb.commands.run("/tmp/run.sh")).stdout, "ran\n");
  const big = new Uint8Array(3 << 20).map((_, i) => i % 251);
  let n = 0;
  const stream = new ReadableStream({ pull(c) { if (n >= big.length) return c.close(); c.enqueue(big.subarray(n, n + 65536)); n += 65536; } });
  assert.equal((await sb.files.write("/tmp/big", stream)).size, big.length);
  const rs = await sb.files.readStream("/tmp/big");
  let got = 0, ok = true;
  for await (const chunk of rs) { for (const b of chunk) { if (b !== (got % 251)) ok = false; got++; } }
  assert.equal(got, big.length);
  assert.ok(ok, "the streamed bytes");
  assert.equal(await (await sb.files.read("/tmp/bin", { format: "blob" })).size, 256);

  const up = await sb.files.writeFiles("/tmp/up", [{ name: "x.txt", data: "x" }, { name: "sub/y.bin", data: new Uint8Array([1, 2, 3]) }, { name: "z", data: new Blob(["zz"]) }]);
  assert.deepEqual(up.map((e) => e.path).sort(), ["/tmp/up/sub/y.bin", "/tmp/up/x.txt", "/tmp/up/z"]);
  assert.deepEqual((await sb.files.list("/tmp/up")).map((e) => `${e.name}:${e.type}`), ["sub:dir", "x.txt:file", "z:file"]);
  assert.equal((await sb.files.list("/tmp/up", { depth: 2 })).length, 4);
  const dir = await sb.files.makeDir("/tmp/m/n");
  assert.equal(dir.type, "dir");
  await sb.files.makeDir("/tmp/m/n");
  const moved = await sb.files.rename("/tmp/up/x.txt", "/tmp/m/n/x2.txt");
  assert.equal(moved.path, "/tmp/m/n/x2.txt");
  assert.equal(await sb.files.read("/tmp/m/n/x2.txt"), "x");
  assert.ok(await sb.files.exists("/tmp/m/n/x2.txt"));
  await sb.files.remove("/tmp/m");
  assert.equal(await sb.files.exists("/tmp/m"), false);
  const missing = await sb.files.read("/tmp/none").catch((e) => e);
  assert.ok(missing instanceof NotFoundError && missing.detail.includes("/tmp/none"), String(missing));
});

test("files: watch sees changes until stopped", async () => {
  await sb.files.makeDir("/tmp/w");
  const events = [];
  const w = await sb.files.watch("/tmp/w", (e) => events.push(e), { recursive: true });
  await sb.files.write("/tmp/w/new.txt", "1");
  await sb.files.remove("/tmp/w/new.txt");
  await until("the watch's events", () => events.some((e) => e.type === "remove" && e.path === "/tmp/w/new.txt"));
  assert.ok(events.some((e) => e.type === "create" && e.path.startsWith("/tmp/w/")), JSON.stringify(events));
  w.stop();
  await w.wait();
  const n = events.length;
  await sb.files.write("/tmp/w/after.txt", "2");
  assert.equal(events.length, n);
});

test("pty: create, input, resize (message and REST), connect by tag, exit code", async () => {
  const chunks = [];
  const text = () => Buffer.concat(chunks).toString();
  const h = await sb.pty.create({ cols: 80, rows: 24, tag: "term", envs: { T: "pty-env" }, onData: (d) => chunks.push(Buffer.from(d)) });
  assert.ok(h.pid > 0);
  assert.ok((await sb.commands.get("term")).pty);
  h.sendInput("echo $T; stty size\n");
  await until("the PTY's echo", () => text().includes("pty-env") && text().includes("24 80"));
  h.resize({ cols: 100, rows: 30 });
  h.sendInput("stty size\n");
  await until("the resize message", () => text().includes("30 100"));
  await sb.pty.resize("term", { cols: 120, rows: 40 });
  await sb.pty.sendInput("term", "stty size\n");
  await until("the REST resize", () => text().includes("40 120"));
  h.disconnect();
  await assert.rejects(h.wait(), DisconnectedError);

  const again = [];
  const h2 = await sb.pty.connect("term", { onData: (d) => again.push(Buffer.from(d)) });
  await until("the buffered output on connect", () => Buffer.concat(again).toString().includes("pty-env"));
  h2.sendInput("exit 3\n");
  const res = await h2.wait();
  assert.equal(res.exitCode, 3);

  const k = await sb.pty.create({ cmd: "sleep 600" });
  await k.kill();
  const killed = await k.wait();
  assert.equal(killed.signal, "KILL");
});

test("a stream whose sandbox stops ends with SandboxStoppedError", async () => {
  const other = await create();
  const h = await other.commands.start("sleep 600");
  const t = await other.pty.create({ cmd: "sleep 600" });
  await other.delete();
  await assert.rejects(h.wait(), SandboxStoppedError);
  await assert.rejects(t.wait(), (e) => e instanceof SandboxStoppedError || /ended before/.test(e.message));
});
