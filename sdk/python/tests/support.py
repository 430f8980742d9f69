"""What the live tests share: the server from SBX_URL and SBX_API_KEY (an
admin key), and bounded waits. Without SBX_URL the live tests fail, unless
SBX_SDK_OFFLINE=1 asks for the offline tests alone."""
from __future__ import annotations

import os
import time
import unittest
import uuid
from typing import Callable, Optional, TypeVar

T = TypeVar("T")

URL = os.environ.get("SBX_URL", "")
KEY = os.environ.get("SBX_API_KEY", "")
OFFLINE = os.environ.get("SBX_SDK_OFFLINE") == "1"


class LiveTest(unittest.TestCase):
    """A test against the real server."""

    @classmethod
    def setUpClass(cls) -> None:
        if OFFLINE:
            raise unittest.SkipTest("SBX_SDK_OFFLINE=1")
        if not URL or not KEY:
            raise RuntimeError("the live tests need SBX_URL and SBX_API_KEY (an admin key) of a running `sbx serve`")


def wait_until(what: str, fn: Callable[[], Optional[T]], timeout: float = 60.0, every: float = 0.1) -> T:
    """fn's first truthy answer, tried until timeout (a hang guard, not a timed assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(every)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
