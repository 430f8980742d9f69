"""The asyncio API against a real `sbx serve`: lifecycle, commands, files,
terminals and errors."""
from __future__ import annotations

import asyncio
import io
import unittest

from sbx_sdk import AsyncClient, AsyncSandbox, ConflictError, NotFoundError, SbxError
from tests.support import LiveTest


class AsyncTest(LiveTest, unittest.IsolatedAsyncioTestCase):
    async def test_reference_004_lifecycle(self) -> None:
        sandbox = await AsyncSandbox.create("base", timeout=1800, wait_ready=True, env_vars={"FOO": "bar"},
                                            metadata={"purpose": "demo"})
        try:
            self.assertEqual((sandbox.state, sandbox.data["metadata"]), ("running", {"purpose": "demo"}))
            sandbox_id = sandbox.sandbox_id
            self.assertIs(await sandbox.connect(timeout=1800), sandbox)
            reconnected = await AsyncSandbox.connect(sandbox_id, timeout=1800)
            self.assertEqual(reconnected.id, sandbox.id)
            self.assertEqual((await reconnected.commands.run("echo $FOO")).stdout, "bar\n")
            await sandbox.set_timeout(3600)
            self.assertEqual(sandbox.data["timeout"], 3600)
            await sandbox.refresh()
            await sandbox.pause()
            self.assertEqual(sandbox.state, "paused")
            with self.assertRaises(ConflictError):
                await sandbox.pause()
        finally:
            await sandbox.delete()
        self.assertEqual(sandbox.state, "killed")

    async def test_async_with_and_errors(self) -> None:
        async with AsyncSandbox.create("base", wait_ready=True) as sb:
            self.assertEqual(sb.state, "running")
            with self.assertRaises(ConflictError) as cm:
                await sb.resume()
            self.assertEqual(cm.exception.status, 409)
        self.assertEqual((await sb.info())["state"], "killed")
        with self.assertRaises(NotFoundError):
            await AsyncSandbox.connect("sbx-no-such-sandbox")
        async with AsyncClient() as c:
            self.assertEqual((await c.me())["org"]["name"], "default")
            self.assertIn("paths", await c.call("openapi"))

    async def test_commands(self) -> None:
        async with AsyncSandbox.create("base", wait_ready=True) as sb:
            out: list = []
            r = await sb.commands.run("echo a; echo b >&2; exit 4", on_stdout=out.append)
            self.assertEqual((r.stdout, r.stderr, r.exit_code, "".join(out)), ("a\n", "b\n", 4, "a\n"))
            seen: list = []
            h = await sb.commands.run("cat", background=True, stdin=True, tag="acat", on_stdout=seen.append)
            await h.send_stdin("x")
            await sb.commands.send_stdin("acat", "y\n")
            other = await sb.commands.connect("acat")
            self.assertTrue(any(c["pid"] == h.pid for c in await sb.commands.list()))
            self.assertEqual((await sb.commands.get("acat"))["pid"], h.pid)
            await h.close_stdin()
            self.assertEqual((await h.wait(30)).stdout, "xy\n")
            self.assertEqual((await other.wait(30)).stdout, "xy\n")
            k = await sb.commands.run("sleep 600", background=True)
            await k.kill()
            self.assertEqual((await k.wait(30)).signal, "KILL")
            ready: list = []
            s = await sb.commands.run("trap 'exit 9' TERM; echo ready; while :; do sleep 0.1; done",
                                      background=True, on_stdout=ready.append)
            for _ in range(300):
                if ready:
                    break
                await asyncio.sleep(0.1)
            await s.signal("TERM")
            self.assertEqual((await s.wait(30)).exit_code, 9)
            d = await sb.commands.run("sleep 600", background=True)
            await d.disconnect()
            with self.assertRaises(SbxError):
                await d.wait(5)
            await sb.commands.kill(d.pid)

    async def test_files(self) -> None:
        async with AsyncSandbox.create("base", wait_ready=True) as sb:
            f = sb.files
            self.assertEqual((await f.write("t.txt", "text"))["size"], 4)
            self.assertEqual(await f.read("t.txt"), "text")
            data = bytes(range(256)) * 1000

            async def agen():
                for i in range(0, len(data), 10000):
                    yield data[i:i + 10000]
            self.assertEqual((await f.write("a.bin", agen()))["size"], len(data))
            self.assertEqual((await f.write("b.bin", io.BytesIO(data)))["size"], len(data))
            self.assertEqual(await f.read_bytes("a.bin"), data)
            async with f.read_stream("b.bin") as chunks:
                self.assertEqual(b"".join([c async for c in chunks]), data)
            items = await f.write_files("up", [("1.txt", "1"), ("d/2.txt", b"2")])
            self.assertEqual(len(items), 2)
            self.assertEqual([e["name"] for e in await f.list("up")], ["1.txt", "d"])
            self.assertEqual((await f.stat("up/d"))["type"], "dir")
            await f.make_dir("m/n")
            self.assertEqual((await f.rename("up/1.txt", "m/n/1.txt"))["path"], "/workspace/m/n/1.txt")
            await f.remove("m")
            self.assertFalse(await f.exists("m"))
            events: list = []
            w = await f.watch("/workspace", events.append)
            await f.write("watched.txt", "w")
            for _ in range(300):
                if any(e["type"] == "create" for e in events):
                    break
                await asyncio.sleep(0.1)
            await w.stop()
            self.assertTrue(any(e["type"] == "create" for e in events), events)
            with self.assertRaises(NotFoundError):
                await f.read("nope")

    async def test_pty_logs_metrics(self) -> None:
        async with AsyncSandbox.create("base", wait_ready=True) as sb:
            out: list = []
            p = await sb.pty.create(cols=80, rows=24, on_data=out.append)
            await p.resize(90, 20)
            await sb.pty.resize(p.pid, 91, 21)
            await p.send_input("stty size; exit 2\n")
            self.assertEqual((await p.wait(30)).exit_code, 2)
            self.assertIn(b"21 91", b"".join(out))
            self.assertGreater((await sb.metrics())["memoryBytes"], 0)
            self.assertTrue((await sb.logs())["items"])


if __name__ == "__main__":
    unittest.main()
