"""run_code in the code-interpreter template: state kept between runs, a
figure as a PNG, an exception, callbacks per event type, contexts."""
from __future__ import annotations

import struct

from sbx_sdk import AsyncSandbox, Sandbox
from tests.support import LiveTest
import unittest


class CodeTest(LiveTest):
    def test_run_code(self) -> None:
        with Sandbox.create("code-interpreter", wait_ready=True, memory_mb=1024, timeout=1800) as sb:
            ex = sb.run_code("x = 41")
            self.assertEqual((ex.status, ex.execution_count, ex.error), ("ok", 1, None))
            self.assertTrue(ex.context_id)
            self.assertEqual(sb.run_code("x + 1").text, "42")  # state kept

            out, results = [], []
            ex = sb.run_code("print('hi')\nimport matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=100)\n"
                             "plt.plot([1, 3, 2])", on_stdout=out.append, on_result=results.append)
            self.assertEqual((ex.stdout, "".join(out)), ("hi\n", "hi\n"))
            pngs = [r.png_bytes() for r in ex.results if r.png]
            self.assertEqual(len(pngs), 1, ex.results)
            png = pngs[0]
            assert png is not None
            self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
            width, height = struct.unpack(">II", png[16:24])
            self.assertGreater(width, 0)
            self.assertGreater(height, 0)
            self.assertEqual(len(results), len(ex.results))

            errors = []
            ex = sb.run_code("1 / 0", on_error=errors.append)
            assert ex.error is not None
            self.assertEqual((ex.error.name, ex.error.value, ex.status), ("ZeroDivisionError", "division by zero", "error"))
            self.assertTrue(ex.error.traceback)
            self.assertEqual(errors, [ex.error])

            ctx = sb.code.create_context(language="python")
            sb.run_code("x = 'other'", context=ctx)
            self.assertEqual(sb.run_code("x", context=ctx["id"]).text, "'other'")
            self.assertEqual(sb.run_code("x").text, "41")
            self.assertIn(ctx["id"], [c["id"] for c in sb.code.list_contexts()])
            sb.code.restart_context(ctx)
            self.assertEqual(sb.run_code("'x' in dir()", context=ctx).text, "False")
            self.assertEqual(sb.run_code("echo $((6*7))", language="bash").stdout, "42\n")
            ex = sb.run_code("import time; time.sleep(30)", timeout=1)
            self.assertEqual(ex.status, "timeout")
            self.assertEqual(sb.run_code("x").text, "41")  # the context lived on
            sb.code.delete_context(ctx)


class AsyncCodeTest(LiveTest, unittest.IsolatedAsyncioTestCase):
    async def test_run_code(self) -> None:
        async with AsyncSandbox.create("code-interpreter", wait_ready=True, memory_mb=1024) as sb:
            await sb.run_code("y = 6")
            ex = await sb.run_code("y * 7")
            self.assertEqual(ex.text, "42")
            ex = await sb.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])")
            self.assertTrue(any(r.png for r in ex.results))


if __name__ == "__main__":
    unittest.main()
