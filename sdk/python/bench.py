#!/usr/bin/env python3
"""Times the sync SDK's create -> run `true` -> delete loop.

Reads SBX_URL, SBX_API_KEY, SBX_BENCH_N (default 20) and SBX_BENCH_TEMPLATE
(default base); after 2 warm-up loops, runs SBX_BENCH_N loops, timing each
operation with time.perf_counter(), and prints one JSON line:
{"create": [ms, ...], "run": [ms, ...], "delete": [ms, ...]}.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

from sbx_sdk import Client, Sandbox  # noqa: E402

WARMUP = 2


def main() -> int:
    n = int(os.environ.get("SBX_BENCH_N", "20"))
    template = os.environ.get("SBX_BENCH_TEMPLATE", "base")
    client = Client()  # SBX_URL, SBX_API_KEY
    times: Dict[str, List[float]] = {"create": [], "run": [], "delete": []}
    for i in range(WARMUP + n):
        t0 = time.perf_counter()
        sb = Sandbox.create(template, wait_ready=True, client=client)
        t1 = time.perf_counter()
        try:
            res = sb.commands.run("true")
            t2 = time.perf_counter()
        finally:
            t3 = time.perf_counter()
            sb.delete()
            t4 = time.perf_counter()
        if res.exit_code != 0:
            print(f"`true` exited {res.exit_code}: {res.stderr}", file=sys.stderr)
            return 1
        if i >= WARMUP:
            times["create"].append((t1 - t0) * 1000)
            times["run"].append((t2 - t1) * 1000)
            times["delete"].append((t4 - t3) * 1000)
    client.close()
    print(json.dumps(times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
