"""Runs every ```python block of README.md against the server, in order,
each in a fresh namespace (SBX_URL and SBX_API_KEY come from the
environment, as the README says)."""
from __future__ import annotations

import contextlib
import io
import os
import re
import unittest

from tests.support import LiveTest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def python_blocks() -> list:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


class ReadmeTest(LiveTest):
    def test_examples(self) -> None:
        blocks = python_blocks()
        self.assertGreaterEqual(len(blocks), 5)
        for i, code in enumerate(blocks):
            with self.subTest(block=i, first_line=code.splitlines()[0]):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(code, f"README.md block {i}", "exec"), {"__name__": "__readme__"})


if __name__ == "__main__":
    unittest.main()
