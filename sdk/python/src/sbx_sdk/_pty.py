"""Terminals over the agent's WebSocket (subprotocol sbx.pty): binary
messages carry output and input, text messages PtyControl (resize in, exit
out). The sync API runs the same asyncio code on one background event loop
thread, since websockets 10 has no synchronous client."""
from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Callable, Coroutine, Optional, TypeVar

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatusCode

from ._core import USER_AGENT, ws_url
from .errors import SandboxStoppedError, SbxConnectionError, StreamEndedError, error_from_response
from .models import CommandResult

PTY_PROTOCOL = "sbx.pty"
MAX_MESSAGE = 16 << 20  # the buffered output sent on connect included

DataHandler = Callable[[bytes], Any]
T = TypeVar("T")


class PtySession:
    """One connection to a terminal."""

    def __init__(self, pid: int, on_data: Optional[DataHandler]) -> None:
        self.pid = pid
        self.on_data = on_data
        self.ws: Any = None
        self.result: Optional[CommandResult] = None
        self.error: Optional[BaseException] = None
        self._task: Optional[asyncio.Task] = None
        self._closing = False

    async def open(self, base_url: str, api_key: str, path: str) -> None:
        headers = {"User-Agent": USER_AGENT}
        if api_key:
            headers["Authorization"] = "Bearer " + api_key
        try:
            self.ws = await websockets.connect(  # type: ignore[attr-defined]
                ws_url(base_url, path), subprotocols=[PTY_PROTOCOL], extra_headers=headers,  # type: ignore[list-item]
                max_size=MAX_MESSAGE, open_timeout=30, ping_interval=None)
        except InvalidStatusCode as e:
            raise error_from_response(e.status_code, b"") from e
        except (OSError, asyncio.TimeoutError) as e:
            raise SbxConnectionError(f"terminal {self.pid}: {e}") from e
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            while True:
                try:
                    msg = await self.ws.recv()
                except ConnectionClosed as e:
                    if self._closing:
                        self.error = StreamEndedError(f"terminal {self.pid}: disconnected")
                    elif e.code == 1001:
                        self.error = SandboxStoppedError(e.reason or "the sandbox stopped")
                    else:
                        self.error = StreamEndedError(
                            f"terminal {self.pid}: the connection ended before the terminal exited ({e.code} {e.reason})")
                    return
                if isinstance(msg, bytes):
                    if self.on_data is not None:
                        self.on_data(msg)
                    continue
                ctl = json.loads(msg)
                if ctl.get("type") == "exit":
                    code = ctl.get("exitCode")
                    self.result = CommandResult(pid=self.pid, exit_code=int(code) if code is not None else -1,
                                                signal=ctl.get("signal", ""))
                    await self.ws.close()
                    return
        except BaseException as e:  # a callback's error, a bad message
            self.error = e
            await self.ws.close()

    async def send(self, data: bytes) -> None:
        await self.ws.send(data)

    async def resize(self, cols: int, rows: int) -> None:
        await self.ws.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))

    async def wait(self, timeout: Optional[float] = None) -> CommandResult:
        assert self._task is not None
        await asyncio.wait_for(asyncio.shield(self._task), timeout)
        if self.result is not None:
            return self.result
        raise self.error or StreamEndedError(f"terminal {self.pid}: ended")

    async def disconnect(self) -> None:
        self._closing = True
        if self.ws is not None:
            await self.ws.close()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


class _Loop:
    """One event loop on a daemon thread, for the sync API's WebSockets."""

    _lock = threading.Lock()
    _loop: Optional[asyncio.AbstractEventLoop] = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="sbx-sdk-loop", daemon=True)
                t.start()
                cls._loop = loop
            return cls._loop


def run_sync(coro: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
    """Runs coro on the background loop and waits for its answer."""
    fut = asyncio.run_coroutine_threadsafe(coro, _Loop.get())
    try:
        return fut.result(timeout)
    except BaseException:
        fut.cancel()
        raise
