"""The sync API against a real `sbx serve` with gVisor sandboxes."""
from __future__ import annotations

import io
import threading
import unittest

import httpx

from sbx_sdk import (Client, ConflictError, ForbiddenError, InsufficientCreditsError, InvalidError, KycRequiredError,
                     NotFoundError, PlanLimitExceededError, Sandbox, SandboxStoppedError, SbxError)
from tests.support import URL, LiveTest, unique, wait_until


class LifecycleTest(LiveTest):
    def test_reference_004_lifecycle(self) -> None:
        """Reference 004's lifecycle, in Python spelling."""
        sandbox = Sandbox.create("base", timeout=1800, wait_ready=True, env_vars={"FOO": "bar"},
                                 metadata={"purpose": "demo"})
        try:
            self.assertEqual(sandbox.state, "running")
            self.assertEqual(sandbox.data["metadata"], {"purpose": "demo"})
            self.assertIn("FOO", sandbox.data["envVarNames"])
            self.assertEqual(sandbox.data["timeout"], 1800)
            sandbox_id = sandbox.sandbox_id
            self.assertIs(sandbox.connect(timeout=1800), sandbox)
            reconnected = Sandbox.connect(sandbox_id, timeout=1800)
            self.assertEqual((reconnected.id, reconnected.state), (sandbox.id, "running"))
            self.assertEqual(reconnected.commands.run("echo $FOO").stdout, "bar\n")
            sandbox.set_timeout(3600)
            self.assertEqual(sandbox.data["timeout"], 3600)
            sandbox.refresh()
            sandbox.pause()
            self.assertEqual(sandbox.state, "paused")
            self.assertEqual(sandbox.info()["state"], "paused")
            # connect resumes a paused sandbox
            Sandbox.connect(sandbox_id, timeout=1800)
            self.assertEqual(sandbox.info()["state"], "running")
            sandbox.pause()
        finally:
            sandbox.delete()
        self.assertEqual(sandbox.state, "killed")
        self.assertEqual(Client.shared().get_sandbox(sandbox.id)["end_reason"], "deleted")

    def test_context_manager_deletes(self) -> None:
        with Sandbox.create("base", wait_ready=True) as sb:
            self.assertEqual(sb.state, "running")
        self.assertEqual(sb.info()["state"], "killed")

    def test_hibernate_resume_and_list(self) -> None:
        with Sandbox.create("base", wait_ready=True, metadata={"suite": "py-hibernate"}) as sb:
            sb.files.write("/workspace/kept", "kept")
            sb.hibernate()
            self.assertTrue(sb.data.get("hibernated"))
            sb.resume(timeout=600)
            self.assertEqual(sb.state, "running")
            self.assertEqual(sb.files.read("/workspace/kept"), "kept")
            page = Sandbox.list(metadata={"suite": "py-hibernate"}, state="running")
            self.assertEqual([s["id"] for s in page["items"]], [sb.id])


class ErrorsTest(LiveTest):
    def test_not_found(self) -> None:
        with self.assertRaises(NotFoundError) as cm:
            Sandbox.connect("sbx-no-such-sandbox")
        e = cm.exception
        self.assertEqual((e.status, e.type), (404, "not_found"))
        self.assertIn("not found", e.detail)
        self.assertIsInstance(e, SbxError)

    def test_conflict(self) -> None:
        with Sandbox.create("base", wait_ready=True) as sb:
            with self.assertRaises(ConflictError) as cm:
                sb.resume()
            self.assertEqual((cm.exception.status, cm.exception.type), (409, "conflict"))
            self.assertIn("running", cm.exception.detail)

    def test_invalid_with_fields(self) -> None:
        with self.assertRaises(InvalidError) as cm:
            Sandbox.create("base", ports=[22])
        self.assertEqual(cm.exception.status, 400)
        with self.assertRaises(InvalidError) as cm:
            Sandbox.create("base", provider="nope")
        self.assertIn('provider "nope" is not one of this server\'s', cm.exception.detail)

    def _org(self, **body: object) -> str:
        admin = Client.shared()
        created = admin.call("createOrg", body={"name": unique("py"), **body})
        return created["secret"]

    def test_insufficient_credits(self) -> None:
        key = self._org(kyc_status="verified")  # no credits
        with self.assertRaises(InsufficientCreditsError) as cm:
            Sandbox.create("base", api_key=key)
        self.assertEqual((cm.exception.status, cm.exception.type), (402, "insufficient_credits"))
        self.assertIn("credits", cm.exception.detail)

    def test_forbidden(self) -> None:
        key = self._org(kyc_status="verified", credits="10")
        with Client(URL, key) as c:
            with self.assertRaises(ForbiddenError) as cm:
                c.call("listOrgs")  # an org owner's key on the operator's route
            self.assertEqual((cm.exception.status, cm.exception.type), (403, "forbidden"))

    def test_kyc_required(self) -> None:
        key = self._org(credits="10")  # unverified
        with self.assertRaises(KycRequiredError) as cm:
            Sandbox.create("base", api_key=key)
        self.assertEqual((cm.exception.status, cm.exception.type), (403, "kyc_required"))
        self.assertIsInstance(cm.exception, ForbiddenError)

    def test_plan_limit(self) -> None:
        key = self._org(kyc_status="verified", credits="10", plan={"name": "tiny", "max_timeout": 60})
        with self.assertRaises(PlanLimitExceededError) as cm:
            Sandbox.create("base", timeout=3600, api_key=key)
        self.assertEqual((cm.exception.status, cm.exception.type), (403, "plan_limit_exceeded"))


class CommandsTest(LiveTest):
    sb: Sandbox

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.sb = Sandbox.create("base", wait_ready=True, timeout=1800)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sb.delete()

    def test_run_streams(self) -> None:
        out, err = [], []
        r = self.sb.commands.run("echo one; echo two >&2; printf three; exit 3", on_stdout=out.append,
                                 on_stderr=err.append, env={"X": "1"})
        self.assertEqual((r.stdout, r.stderr, r.exit_code, r.ok), ("one\nthree", "two\n", 3, False))
        self.assertEqual("".join(out), "one\nthree")
        self.assertEqual("".join(err), "two\n")
        self.assertGreater(r.pid, 0)

    def test_run_options(self) -> None:
        r = self.sb.commands.run(["sh", "-c", "pwd; id -un; echo $V"], cwd="/tmp", user="root", env={"V": "v"})
        self.assertEqual(r.stdout, "/tmp\nroot\nv\n")
        r = self.sb.commands.run("sleep 30", timeout=1)
        self.assertNotEqual(r.exit_code, 0)
        self.assertTrue(r.signal or r.error, r)
        self.assertEqual(self.sb.commands.run("no-such-program").exit_code, 127)

    def test_background_stdin_connect_list_kill(self) -> None:
        seen = []
        h = self.sb.commands.run("cat", background=True, stdin=True, tag="py-cat", on_stdout=seen.append)
        self.assertEqual(h.tag, "py-cat")
        h.send_stdin("hello ")
        self.sb.commands.send_stdin("py-cat", b"world\n")
        wait_until("the output", lambda: "".join(seen) == "hello world\n", 30)
        other = self.sb.commands.connect("py-cat")
        self.assertEqual(other.pid, h.pid)
        self.assertTrue(any(c["pid"] == h.pid and c["running"] for c in self.sb.commands.list()))
        self.assertEqual(self.sb.commands.get(h.pid)["tag"], "py-cat")
        h.close_stdin()
        r = h.wait(30)
        self.assertEqual((r.exit_code, r.stdout), (0, "hello world\n"))
        self.assertEqual(other.wait(30).stdout, "hello world\n")

        k = self.sb.commands.run("sleep 600", background=True, tag="py-sleep")
        self.sb.commands.kill("py-sleep")
        r = k.wait(30)
        self.assertEqual((r.exit_code, r.signal), (-1, "KILL"))

        ready: list = []
        s = self.sb.commands.run("trap 'echo got; exit 7' TERM; echo ready; while :; do sleep 0.1; done",
                                 background=True, on_stdout=ready.append)
        wait_until("ready", lambda: "ready" in "".join(ready), 30)
        s.signal("TERM")
        r = s.wait(30)
        self.assertEqual((r.exit_code, r.stdout), (7, "ready\ngot\n"))

        d = self.sb.commands.run("sleep 1; echo late", background=True)
        d.disconnect()
        with self.assertRaises(SbxError):
            d.wait(30)
        self.assertEqual(self.sb.commands.connect(d.pid).wait(30).stdout, "late\n")

    def test_stream_of_a_deleted_sandbox(self) -> None:
        sb = Sandbox.create("base", wait_ready=True)
        h = sb.commands.run("sleep 600", background=True)
        sb.delete()
        with self.assertRaises(SandboxStoppedError):
            h.wait(60)


class FilesTest(LiveTest):
    sb: Sandbox

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.sb = Sandbox.create("base", wait_ready=True, timeout=1800)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sb.delete()

    def test_read_write(self) -> None:
        f = self.sb.files
        info = f.write("dir/a.txt", "héllo")
        self.assertEqual((info["path"], info["size"], info["type"]), ("/workspace/dir/a.txt", 6, "file"))
        self.assertEqual(f.read("/workspace/dir/a.txt"), "héllo")
        data = bytes(range(256)) * 5000
        self.assertEqual(f.write("b.bin", data)["size"], len(data))
        self.assertEqual(f.read_bytes("b.bin"), data)
        self.assertEqual(f.write("c.bin", io.BytesIO(data))["size"], len(data))
        self.assertEqual(f.write("d.bin", (data[i:i + 1000] for i in range(0, len(data), 1000)))["size"], len(data))
        with f.read_stream("d.bin", chunk_size=4096) as chunks:
            self.assertEqual(b"".join(chunks), data)
        self.assertEqual(f.write("x.sh", "#!/bin/sh\necho x\n", user="root")["mode"], "0644")
        self.assertEqual(f.write("y.sh", "#!/bin/sh\necho y\n", mode="755")["mode"], "0755")
        self.assertEqual(self.sb.commands.run("stat -c %U x.sh; sh x.sh").stdout, "root\nx\n")
        with self.assertRaises(NotFoundError) as cm:
            f.read("missing.txt")
        self.assertIn("missing.txt", cm.exception.detail)

    def test_batch_list_stat_mkdir_rename_remove(self) -> None:
        f = self.sb.files
        items = f.write_files("/workspace/batch", {"one.txt": "1", "sub/two.txt": b"22", "three.bin": io.BytesIO(b"333")})
        self.assertEqual(sorted(i["path"] for i in items),
                         ["/workspace/batch/one.txt", "/workspace/batch/sub/two.txt", "/workspace/batch/three.bin"])
        self.assertEqual(f.read("batch/sub/two.txt"), "22")
        self.assertEqual([e["name"] for e in f.list("batch")], ["one.txt", "sub", "three.bin"])
        self.assertIn("/workspace/batch/sub/two.txt", [e["path"] for e in f.list("batch", depth=2)])
        self.assertEqual(f.stat("batch/sub")["type"], "dir")
        self.assertEqual(f.make_dir("made/deep/er")["type"], "dir")
        self.assertEqual(f.make_dir("made/deep/er")["type"], "dir")  # exists: no error
        moved = f.rename("batch/one.txt", "made/one.txt")
        self.assertEqual(moved["path"], "/workspace/made/one.txt")
        self.assertFalse(f.exists("batch/one.txt"))
        f.remove("made")
        self.assertFalse(f.exists("made/one.txt"))

    def test_watch(self) -> None:
        f = self.sb.files
        f.make_dir("watched")
        events = []
        with f.watch("watched", events.append, recursive=True):
            f.write("watched/new.txt", "n")
            wait_until("a create event", lambda: any(e["type"] == "create" for e in events), 30)
            f.remove("watched/new.txt")
            wait_until("a remove event", lambda: any(e["type"] == "remove" for e in events), 30)
        self.assertTrue(all(e["path"].startswith("/workspace/watched/") for e in events), events)


class PtyTest(LiveTest):
    def test_pty(self) -> None:
        with Sandbox.create("base", wait_ready=True) as sb:
            out: list = []
            lock = threading.Lock()

            def on_data(b: bytes) -> None:
                with lock:
                    out.append(b)

            def text() -> str:
                with lock:
                    return b"".join(out).decode("utf-8", "replace")
            p = sb.pty.create(cols=80, rows=24, on_data=on_data, tag="py-pty", env={"PTYV": "pv"})
            self.assertGreater(p.pid, 0)
            p.send_input("stty size; echo $PTYV\n")
            wait_until("24 80", lambda: "24 80" in text(), 30)
            p.resize(100, 30)
            p.send_input("stty size\n")
            wait_until("30 100", lambda: "30 100" in text(), 30)
            sb.pty.resize("py-pty", 120, 40)
            p.send_input("stty size\n")
            wait_until("40 120", lambda: "40 120" in text(), 30)
            self.assertIn("pv", text())
            p.disconnect()

            later: list = []
            q = sb.pty.connect("py-pty", on_data=later.append)  # buffered output, then live
            wait_until("the buffered output", lambda: b"40 120" in b"".join(later), 30)
            self.assertTrue(any(c["pid"] == q.pid and c.get("pty") for c in sb.commands.list()))
            q.send_input("exit 5\n")
            self.assertEqual(q.wait(30).exit_code, 5)

            k = sb.pty.create(cmd="sleep 600")
            k.kill()
            r = k.wait(30)
            self.assertEqual(r.exit_code, -1)


class ObserveTest(LiveTest):
    def test_logs_and_metrics(self) -> None:
        with Sandbox.create("base", wait_ready=True) as sb:
            m = sb.metrics()
            self.assertGreater(m["memoryBytes"], 0)
            self.assertIn("cpuSeconds", m)
            page = sb.logs(limit=2)
            self.assertLessEqual(len(page["items"]), 2)
            self.assertTrue(page["items"])
            lines = []
            done = threading.Event()

            def follow() -> None:
                for line in sb.follow_logs():
                    lines.append(line)
                done.set()
            threading.Thread(target=follow, daemon=True).start()
            wait_until("the log followed", lambda: len(lines) >= len(page["items"]), 30)
            sb.delete()
            self.assertTrue(done.wait(60), "follow_logs did not end with the sandbox")
            self.assertTrue(all("line" in ln and "source" in ln for ln in lines))


class ResourcesTest(LiveTest):
    def test_runtime(self) -> None:
        rts = Client.shared().runtimes
        rt_id = rts.list()["items"][0]["id"]
        rt = rts.start(rt_id)
        try:
            self.assertEqual(rt["status"], "running")
            sb = Sandbox.connect(rt["sandbox_id"])
            sb.files.write("/workspace/rt-state", "kept")
            self.assertEqual(rts.pause(rt_id)["status"], "paused")
            rt = rts.resume(rt_id)
            self.assertEqual(rt["status"], "running")
            self.assertEqual(Sandbox.connect(rt["sandbox_id"]).files.read("/workspace/rt-state"), "kept")
            self.assertEqual(rts.keepalive(rt_id, 600)["status"], "running")
            self.assertEqual(rts.get(rt_id)["id"], rt_id)
            with self.assertRaises(ConflictError):
                rts.start(rt_id)
        finally:
            self.assertEqual(rts.reset(rt_id)["status"], "idle")

    def test_previews(self) -> None:
        def serve(sb: Sandbox) -> None:
            sb.commands.run(["/.sbx/sbx", "agent", "echo", "8080"], background=True, discard_output=True).disconnect()
            r = sb.commands.run("for i in $(seq 100); do curl -sf localhost:8080/ >/dev/null && exit 0; sleep 0.1; done; exit 1")
            self.assertEqual(r.exit_code, 0)

        def fetch(preview_url: str, headers: dict) -> httpx.Response:
            u = httpx.URL(preview_url)
            # every preview host is serve's address, as wildcard DNS would send it
            return httpx.get(URL + u.raw_path.decode(), headers={"Host": u.netloc.decode(), **headers}, timeout=30)

        with Sandbox.create("base", wait_ready=True, ports=[8080], preview={"access": "public"}) as pub:
            serve(pub)
            url = pub.preview_url(8080)
            self.assertIn(pub.sandbox_id, url)
            r = fetch(url + "/echo", {})
            self.assertEqual(r.status_code, 200, r.text)
        with Sandbox.create("base", wait_ready=True, ports=[8080]) as priv:
            serve(priv)
            self.assertEqual(fetch(priv.preview_url(8080) + "/echo", {}).status_code, 401)
            self.assertEqual(fetch(priv.preview_url(8080) + "/echo",
                                   {"X-Sbx-Traffic-Token": priv.traffic_token}).status_code, 200)
            link = priv.create_preview_link(8080, expires=600)
            token = httpx.URL(link["url"]).params["sbx_token"]
            self.assertEqual(fetch(priv.preview_url(8080) + "/echo", {"X-Sbx-Traffic-Token": token}).status_code, 200)
            self.assertEqual([ln["id"] for ln in priv.preview_links()], [link["id"]])
            self.assertTrue(priv.revoke_preview_link(link["id"]).get("revokedAt"))
            self.assertEqual(fetch(priv.preview_url(8080) + "/echo", {"X-Sbx-Traffic-Token": token}).status_code, 401)

    def test_snapshot_fork(self) -> None:
        c = Client.shared()
        with Sandbox.create("base", wait_ready=True) as sb:
            sb.files.write("/workspace/snap", "from the source")
            snap = sb.snapshot(name="py-snap", metadata={"k": "v"})
            self.assertEqual(snap["state"], "ready")
            self.assertEqual(c.snapshots.get(snap["id"])["name"], "py-snap")
            self.assertIn(snap["id"], [s["id"] for s in c.snapshots.list(sandbox_id=sb.id)["items"]])
            with Sandbox.create(snapshot_id=snap["id"], wait_ready=True) as restored:
                self.assertEqual(restored.files.read("/workspace/snap"), "from the source")
            children = sb.fork(2)
            try:
                self.assertEqual(len(children), 2)
                for ch in children:
                    self.assertEqual(ch.data.get("forkedFrom"), sb.id)
                    self.assertEqual(ch.files.read("/workspace/snap"), "from the source")
            finally:
                for ch in children:
                    ch.delete()
            c.snapshots.delete(snap["id"])

    def test_volume(self) -> None:
        vols = Client.shared().volumes
        name = unique("pyvol")
        vol = vols.create(name, 64)
        try:
            self.assertEqual(vols.get(name)["id"], vol["id"])
            vols.write_file(name, "/seed.txt", "seeded")
            with Sandbox.create("base", wait_ready=True, volumes=[{"name": name, "path": "/mnt"}]) as sb:
                self.assertEqual(sb.files.read("/mnt/seed.txt"), "seeded")
                sb.commands.run("echo written > /mnt/out.txt", user="root")
            self.assertEqual(vols.read_file(name, "/out.txt"), b"written\n")
            self.assertIn("out.txt", [e["name"] for e in vols.list_files(name, "/")])
        finally:
            vols.delete(name)

    def test_generic_call(self) -> None:
        c = Client.shared()
        self.assertEqual(c.call("me")["org"]["name"], "default")
        doc = c.call("openapi")
        self.assertIn("paths", doc)
        self.assertIn("base", [t["name"] for t in c.call("listTemplates")["items"]])


if __name__ == "__main__":
    unittest.main()
