"""The asyncio API: the sync API's names with Async in front, every
method that talks to the server a coroutine."""
from __future__ import annotations

import asyncio
import contextlib
import uuid
import weakref
from typing import (Any, Literal, AsyncContextManager, AsyncIterable, AsyncIterator, Awaitable, Callable, Dict, Generator,
                    Iterable, List, Mapping, Optional, Sequence, Tuple, Union, overload)

import httpx

from . import _generated as g
from ._core import NO_BODY, AsyncTransport, QueryValue, aiter_ndjson, build, resolve_config
from ._pty import DataHandler, PtySession
from ._sync import UPLOAD_CHUNK, FileData, _connect_body, _ctx_id, _dual, _part_of
from .errors import ConflictError, NotFoundError, SandboxStoppedError, SbxConnectionError, SbxError, StreamEndedError
from .models import (CommandOutput, CommandResult, Execution, ExecutionBuilder, ExecutionError, OutputHandler, Result,
                     code_request, command_request, create_request, pty_request, seconds, to_bytes)

__all__ = ["AsyncClient", "AsyncSandbox", "AsyncCommands", "AsyncCommandHandle", "AsyncFiles", "AsyncWatchHandle",
           "AsyncPty", "AsyncPtyHandle", "AsyncCode", "AsyncSnapshots", "AsyncVolumes", "AsyncRuntimes"]

AsyncFileData = Union[FileData, AsyncIterable[bytes]]
CREATE_TRIES = 2


def _abody_of(data: AsyncFileData) -> Any:
    if isinstance(data, (str, bytes, bytearray, memoryview)):
        return to_bytes(data)
    if hasattr(data, "__aiter__"):
        return data
    read = getattr(data, "read", None)
    source: Iterable[bytes] = iter(lambda: read(UPLOAD_CHUNK), b"") if read is not None else data  # type: ignore

    async def gen() -> AsyncIterator[bytes]:
        for chunk in source:
            yield chunk
    return gen()


_shared: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Dict[Tuple[str, str], AsyncClient]]" = \
    weakref.WeakKeyDictionary()


class AsyncClient:
    """Client for asyncio: one sbx server's URL and API key (by default
    SBX_URL and SBX_API_KEY). AsyncSandbox methods given no client share one
    per event loop, URL and key."""

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None, *,
                 http_client: Optional[httpx.AsyncClient] = None) -> None:
        self._t = AsyncTransport(url, api_key, http_client)
        self.snapshots = AsyncSnapshots(self)
        self.volumes = AsyncVolumes(self)
        self.runtimes = AsyncRuntimes(self)

    @classmethod
    def shared(cls, url: Optional[str] = None, api_key: Optional[str] = None) -> "AsyncClient":
        """The client this event loop shares for url and api_key."""
        k = resolve_config(url, api_key)
        per_loop = _shared.setdefault(asyncio.get_running_loop(), {})
        c = per_loop.get(k)
        if c is None:
            c = per_loop[k] = cls(*k)
        return c

    @property
    def url(self) -> str:
        return self._t.url

    @property
    def api_key(self) -> str:
        return self._t.api_key

    async def close(self) -> None:
        await self._t.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def call(self, operation_id: "g.OperationId", *, path: Optional[Mapping[str, Any]] = None,
                   query: Optional[Mapping[str, QueryValue]] = None, body: Any = NO_BODY,
                   headers: Optional[Mapping[str, str]] = None, content: Optional[bytes] = None) -> Any:
        """Sends any operation of the OpenAPI document by its operationId; see Client.call."""
        return await self._t.call(build(operation_id, path, query, body, headers=headers, content=content))

    async def _call(self, op: str, path: Optional[Mapping[str, Any]] = None,
                    query: Optional[Mapping[str, QueryValue]] = None, body: Any = NO_BODY, **kw: Any) -> Any:
        return await self._t.call(build(op, path, query, body, **kw))

    async def me(self) -> g.Me:
        return await self._call("me")

    async def list_sandboxes(self, *, state: Union[str, Sequence[str], None] = None, template: Optional[str] = None,
                             metadata: Optional[Mapping[str, str]] = None, limit: Optional[int] = None,
                             cursor: Optional[str] = None) -> g.SandboxList:
        md = [f"{k}={v}" for k, v in sorted((metadata or {}).items())] or None
        st = [state] if isinstance(state, str) else state
        return await self._call("listSandboxes", query={"state": st, "template": template, "metadata": md,
                                                        "limit": limit, "cursor": cursor})

    async def get_sandbox(self, sandbox_id: str) -> g.Sandbox:
        return await self._call("getSandbox", {"id": sandbox_id})


class _Creating:
    """What AsyncSandbox.create answers: await it for the sandbox, or use it
    in ``async with`` to delete the sandbox on exit."""

    def __init__(self, coro: Awaitable["AsyncSandbox"]) -> None:
        self._coro = coro
        self._sb: Optional[AsyncSandbox] = None

    def __await__(self) -> Generator[Any, None, "AsyncSandbox"]:
        return self._coro.__await__()

    async def __aenter__(self) -> "AsyncSandbox":
        self._sb = await self._coro
        return self._sb

    async def __aexit__(self, *exc: Any) -> None:
        if self._sb is not None:
            await self._sb.__aexit__(*exc)


class AsyncSandbox:
    """Sandbox for asyncio; see Sandbox.

        async with AsyncSandbox.create("base", wait_ready=True) as sb:
            print((await sb.commands.run("echo hi")).stdout)
    """

    commands: "AsyncCommands"
    files: "AsyncFiles"
    pty: "AsyncPty"
    code: "AsyncCode"

    def __init__(self, data: g.Sandbox, client: AsyncClient) -> None:
        self._data = data
        self._client = client
        self.commands = AsyncCommands(client, data["id"])
        self.files = AsyncFiles(client, data["id"])
        self.pty = AsyncPty(client, data["id"])
        self.code = AsyncCode(client, data["id"])

    def __repr__(self) -> str:
        return f"<AsyncSandbox {self.sandbox_id} {self.state}>"

    @classmethod
    def create(cls, template: Optional[str] = "base", *, timeout: Optional[float] = None, wait_ready: bool = False,
               env_vars: Optional[Mapping[str, str]] = None, metadata: Optional[Mapping[str, str]] = None,
               auto_pause: bool = False, cpu: Optional[float] = None, memory_mb: Optional[int] = None,
               disk_mb: Optional[int] = None, gpu: Optional[g.GPU] = None, kind: Optional[str] = None,
               preview: Optional[g.Preview] = None, ports: Optional[Sequence[int]] = None,
               egress: Optional[g.Egress] = None, project_id: Optional[str] = None,
               image: Union[g.Image, str, None] = None, snapshot_id: Optional[str] = None,
               volumes: Optional[Sequence[g.VolumeMount]] = None, warm_pool: Optional[str] = None,
               provider: Optional[str] = None,
               idempotency_key: Optional[str] = None, url: Optional[str] = None, api_key: Optional[str] = None,
               client: Optional[AsyncClient] = None) -> _Creating:
        """Starts a sandbox; see Sandbox.create. ``await`` it, or use it in ``async with``."""
        if snapshot_id and template == "base":
            template = None
        body = create_request(template, timeout=timeout, wait_ready=wait_ready, env_vars=env_vars, metadata=metadata,
                              auto_pause=auto_pause, cpu=cpu, memory_mb=memory_mb, disk_mb=disk_mb, gpu=gpu, kind=kind,
                              preview=preview, ports=ports, egress=egress, project_id=project_id, image=image,
                              snapshot_id=snapshot_id, volumes=volumes, warm_pool=warm_pool,
                              provider=provider)
        key = idempotency_key or str(uuid.uuid4())

        async def run() -> "AsyncSandbox":
            c = client or AsyncClient.shared(url, api_key)
            req = build("createSandbox", body=body, headers={"Idempotency-Key": key})
            for attempt in range(1, CREATE_TRIES + 1):
                try:
                    return cls(await c._t.call(req), c)
                except SbxConnectionError:
                    if attempt == CREATE_TRIES:
                        raise
            raise AssertionError("unreachable")
        return _Creating(run())

    @_dual
    async def connect(cls, sandbox_id: str, *, timeout: Optional[float] = None, rotate_access_token: bool = False,
                      url: Optional[str] = None, api_key: Optional[str] = None,
                      client: Optional[AsyncClient] = None) -> "AsyncSandbox":
        """AsyncSandbox.connect(sandbox_id, timeout=...) or sandbox.connect(timeout=...); see Sandbox.connect."""
        c = client or AsyncClient.shared(url, api_key)
        return cls(await c._call("connectSandbox", {"id": sandbox_id},
                                 body=_connect_body(timeout, rotate_access_token)), c)

    @connect.instance
    async def connect(self, *, timeout: Optional[float] = None, rotate_access_token: bool = False) -> "AsyncSandbox":
        self._data = await self._client._call("connectSandbox", {"id": self.id},
                                              body=_connect_body(timeout, rotate_access_token))
        return self

    @classmethod
    async def list(cls, *, state: Union[str, Sequence[str], None] = None, template: Optional[str] = None,
                   metadata: Optional[Mapping[str, str]] = None, limit: Optional[int] = None,
                   cursor: Optional[str] = None, url: Optional[str] = None, api_key: Optional[str] = None,
                   client: Optional[AsyncClient] = None) -> g.SandboxList:
        c = client or AsyncClient.shared(url, api_key)
        return await c.list_sandboxes(state=state, template=template, metadata=metadata, limit=limit, cursor=cursor)

    @property
    def id(self) -> str:
        return self._data["id"]

    @property
    def sandbox_id(self) -> str:
        return self._data["sandboxID"]

    @property
    def data(self) -> g.Sandbox:
        return self._data

    @property
    def state(self) -> str:
        return self._data["state"]

    @property
    def client(self) -> AsyncClient:
        return self._client

    async def info(self) -> g.Sandbox:
        self._data = await self._client._call("getSandbox", {"id": self.id})
        return self._data

    async def set_timeout(self, timeout: float) -> None:
        self._data = await self._client._call("setSandboxTimeout", {"id": self.id}, body={"timeout": seconds(timeout)})

    async def refresh(self, duration: Optional[float] = None) -> None:
        body = {"duration": seconds(duration)} if duration else {}
        self._data = await self._client._call("refreshSandbox", {"id": self.id}, body=body)

    async def pause(self) -> None:
        self._data = await self._client._call("pauseSandbox", {"id": self.id}, body={})

    async def hibernate(self) -> None:
        self._data = await self._client._call("pauseSandbox", {"id": self.id}, body={"hibernate": True})

    async def resume(self, timeout: Optional[float] = None) -> None:
        body = {"timeout": seconds(timeout)} if timeout else {}
        self._data = await self._client._call("resumeSandbox", {"id": self.id}, body=body)

    async def set_egress(self, egress: g.Egress) -> None:
        self._data = await self._client._call("setSandboxEgress", {"id": self.id}, body=egress)

    async def delete(self) -> None:
        self._data = await self._client._call("deleteSandbox", {"id": self.id})

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._data.get("state") in ("killed", "failed"):
            return
        try:
            await self.delete()
        except (NotFoundError, ConflictError):
            pass

    async def logs(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> g.LogPage:
        return await self._client._call("sandboxLogs", {"id": self.id}, {"cursor": cursor, "limit": limit})

    async def follow_logs(self) -> AsyncIterator[g.LogLine]:
        """``async for line in sandbox.follow_logs()``: the whole log, then live, until the sandbox ends."""
        async with self._client._t.stream(build("followSandboxLogs", {"id": self.id})) as resp:
            async for line in aiter_ndjson(resp):
                yield line  # type: ignore[misc]

    async def metrics(self) -> g.Metrics:
        return await self._client._call("sandboxMetrics", {"id": self.id})

    def preview_url(self, port: int) -> str:
        tpl = self._data.get("previewURL")
        if not tpl:
            raise SbxError(f"sandbox {self.sandbox_id} has no preview URL (is it running?)")
        return tpl.replace("{port}", str(port))

    @property
    def traffic_token(self) -> str:
        return self._data.get("trafficToken", "")

    async def create_preview_link(self, port: int, *, expires: Optional[float] = None) -> g.PreviewLink:
        body: Dict[str, Any] = {"port": port}
        if expires:
            body["expires"] = seconds(expires)
        return await self._client._call("createPreviewLink", {"id": self.id}, body=body)

    async def preview_links(self) -> List[g.PreviewLink]:
        return (await self._client._call("listPreviewLinks", {"id": self.id}))["items"]

    async def revoke_preview_link(self, link_id: str) -> g.PreviewLink:
        return await self._client._call("revokePreviewLink", {"id": self.id, "link_id": link_id})

    async def snapshot(self, *, name: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None,
                       files_only: bool = False) -> g.Snapshot:
        body: Dict[str, Any] = {}
        if name:
            body["name"] = name
        if metadata:
            body["metadata"] = dict(metadata)
        if files_only:
            body["memory"] = False
        return await self._client._call("createSnapshot", {"id": self.id}, body=body)

    async def fork(self, count: int = 1) -> List["AsyncSandbox"]:
        res: g.ForkResult = await self._client._call("forkSandbox", {"id": self.id}, body={"count": count})
        if not res["children"] and res["errors"]:
            raise SbxError("fork: " + "; ".join(res["errors"]))
        return [AsyncSandbox(c, self._client) for c in res["children"]]

    async def run_code(self, code: str, *, language: Optional[str] = None,
                       context: Union[str, g.CodeContext, None] = None, timeout: Optional[float] = None,
                       on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                       on_result: Optional[Callable[[Result], Any]] = None,
                       on_error: Optional[Callable[[ExecutionError], Any]] = None) -> Execution:
        return await self.code.run(code, language=language, context=context, timeout=timeout, on_stdout=on_stdout,
                                   on_stderr=on_stderr, on_result=on_result, on_error=on_error)


class _AsyncFollowing:
    def __init__(self, cm: AsyncContextManager[httpx.Response], resp: httpx.Response) -> None:
        self._cm, self._resp = cm, resp
        self._disconnected = False
        self._error: Optional[BaseException] = None
        self._task: Optional[asyncio.Task] = None
        self._closed = False

    async def _close(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(BaseException):
                await self._cm.__aexit__(None, None, None)

    def _start(self, work: Callable[[httpx.Response], Awaitable[None]]) -> None:
        async def run() -> None:
            try:
                await work(self._resp)
            except asyncio.CancelledError:
                pass
            except BaseException as e:  # noqa: BLE001 - reported by wait()
                self._error = e
            finally:
                await self._close()
        self._task = asyncio.ensure_future(run())

    async def _disconnect(self) -> None:
        self._disconnected = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._close()  # a task cancelled before it ran never closed the stream

    async def _join(self, timeout: Optional[float]) -> None:
        assert self._task is not None
        done, _ = await asyncio.wait({self._task}, timeout=timeout)
        if not done:
            raise asyncio.TimeoutError(f"still running after {timeout} s")


class AsyncCommandHandle(_AsyncFollowing):
    """Follows a command in the background (a task of the event loop); see CommandHandle."""

    def __init__(self, commands: "AsyncCommands", info: g.CommandInfo, cm: AsyncContextManager[httpx.Response],
                 resp: httpx.Response, out: CommandOutput) -> None:
        super().__init__(cm, resp)
        self._commands, self.info = commands, info
        self._result: Optional[CommandResult] = None

        async def work(r: httpx.Response) -> None:
            async for e in aiter_ndjson(r):
                if out.event(e):  # type: ignore[arg-type]
                    break
            self._result = out.finish()
        self._start(work)

    @property
    def pid(self) -> int:
        return self.info["pid"]

    @property
    def tag(self) -> str:
        return self.info.get("tag", "")

    async def wait(self, timeout: Optional[float] = None) -> CommandResult:
        await self._join(timeout)
        if self._disconnected:
            raise StreamEndedError(f"disconnected from command {self.pid}")
        if self._result is not None:
            return self._result
        raise self._error or StreamEndedError(f"command {self.pid}: the stream ended")

    async def disconnect(self) -> None:
        await self._disconnect()

    async def kill(self) -> None:
        await self._commands.kill(self.pid)

    async def signal(self, signal: str) -> None:
        await self._commands.signal(self.pid, signal)

    async def send_stdin(self, data: Union[str, bytes]) -> None:
        await self._commands.send_stdin(self.pid, data)

    async def close_stdin(self) -> None:
        await self._commands.close_stdin(self.pid)


class AsyncCommands:
    """Commands for asyncio; see Commands."""

    def __init__(self, client: AsyncClient, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    @overload
    async def run(self, cmd: Union[str, Sequence[str]], *, background: Literal[False] = False,
                  env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None, user: Optional[str] = None,
                  tag: Optional[str] = None, timeout: Optional[float] = None, stdin: bool = False,
                  on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                  discard_output: bool = False) -> CommandResult: ...

    @overload
    async def run(self, cmd: Union[str, Sequence[str]], *, background: Literal[True],
                  env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None, user: Optional[str] = None,
                  tag: Optional[str] = None, timeout: Optional[float] = None, stdin: bool = False,
                  on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                  discard_output: bool = False) -> AsyncCommandHandle: ...

    async def run(self, cmd: Union[str, Sequence[str]], *, background: bool = False,
                  env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None, user: Optional[str] = None,
                  tag: Optional[str] = None, timeout: Optional[float] = None, stdin: bool = False,
                  on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                  discard_output: bool = False) -> Union[CommandResult, AsyncCommandHandle]:
        body = command_request(cmd, env=env, cwd=cwd, user=user, tag=tag, timeout=timeout, stdin=stdin,
                               background=background)
        if background:
            info: g.CommandInfo = await self._c._call("startCommand", {"id": self._id}, body=body)
            try:
                return await self._follow(info, on_stdout, on_stderr, discard_output)
            except BaseException:
                await self._abandon(info["pid"])
                raise
        out = CommandOutput(0, on_stdout, on_stderr, not discard_output)
        try:
            async with self._c._t.stream(build("startCommand", {"id": self._id}, body=body)) as resp:
                async for e in aiter_ndjson(resp):
                    if out.event(e):  # type: ignore[arg-type]
                        break
        except asyncio.CancelledError:  # like exec.CommandContext: a cancelled run kills the command
            if out.result.pid:
                await asyncio.shield(self._abandon(out.result.pid))
            raise
        return out.finish()

    async def connect(self, ref: Union[int, str], *, on_stdout: Optional[OutputHandler] = None,
                      on_stderr: Optional[OutputHandler] = None, discard_output: bool = False) -> AsyncCommandHandle:
        return await self._follow(await self.get(ref), on_stdout, on_stderr, discard_output)

    async def _follow(self, info: g.CommandInfo, on_stdout: Optional[OutputHandler],
                      on_stderr: Optional[OutputHandler], discard: bool) -> AsyncCommandHandle:
        cm = self._c._t.stream(build("streamCommand", {"id": self._id, "ref": info["pid"]}))
        resp = await cm.__aenter__()
        return AsyncCommandHandle(self, info, cm, resp, CommandOutput(info["pid"], on_stdout, on_stderr, not discard))

    async def _abandon(self, pid: int) -> None:
        with contextlib.suppress(SbxError):
            await self.kill(pid)

    async def list(self) -> List[g.CommandInfo]:
        return (await self._c._call("listCommands", {"id": self._id}))["items"]

    async def get(self, ref: Union[int, str]) -> g.CommandInfo:
        return await self._c._call("getCommand", {"id": self._id, "ref": ref})

    async def kill(self, ref: Union[int, str]) -> g.CommandInfo:
        return await self._c._call("killCommand", {"id": self._id, "ref": ref})

    async def signal(self, ref: Union[int, str], signal: str) -> g.CommandInfo:
        return await self._c._call("signalCommand", {"id": self._id, "ref": ref}, body={"signal": signal})

    async def send_stdin(self, ref: Union[int, str], data: Union[str, bytes]) -> None:
        await self._c._call("writeStdin", {"id": self._id, "ref": ref}, content=to_bytes(data))

    async def close_stdin(self, ref: Union[int, str]) -> None:
        await self._c._call("closeStdin", {"id": self._id, "ref": ref})


class AsyncWatchHandle(_AsyncFollowing):
    """A running watch (a task of the event loop); see WatchHandle."""

    def __init__(self, cm: AsyncContextManager[httpx.Response], resp: httpx.Response,
                 on_event: Callable[[g.FileEvent], Any], path: str) -> None:
        super().__init__(cm, resp)

        async def work(r: httpx.Response) -> None:
            async for e in aiter_ndjson(r):
                if e.get("type") == "error":
                    raise SandboxStoppedError(e.get("error", "the sandbox stopped"))
                res = on_event(e)  # type: ignore[arg-type]
                if asyncio.iscoroutine(res):
                    await res
            raise StreamEndedError(f"the agent ended the watch of {path}")
        self._start(work)

    async def stop(self) -> None:
        await self._disconnect()

    async def wait(self, timeout: Optional[float] = None) -> None:
        await self._join(timeout)
        if self._error is not None and not self._disconnected:
            raise self._error

    async def __aenter__(self) -> "AsyncWatchHandle":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


class AsyncFiles:
    """Files for asyncio; see Files."""

    def __init__(self, client: AsyncClient, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    async def read(self, path: str, *, encoding: str = "utf-8") -> str:
        return (await self.read_bytes(path)).decode(encoding)

    async def read_bytes(self, path: str) -> bytes:
        return (await self._c._t.send(build("readFile", {"id": self._id}, {"path": path}))).content

    def read_stream(self, path: str, *, chunk_size: int = 1 << 16) -> AsyncContextManager[AsyncIterator[bytes]]:
        """``async with files.read_stream(p) as chunks: async for c in chunks: ...``"""
        @contextlib.asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[bytes]]:
            async with self._c._t.stream(build("readFile", {"id": self._id}, {"path": path})) as resp:
                yield resp.aiter_bytes(chunk_size)
        return cm()

    async def write(self, path: str, data: AsyncFileData, *, user: Optional[str] = None,
                    mode: Optional[str] = None) -> g.EntryInfo:
        req = build("writeFile", {"id": self._id}, {"path": path, "mode": mode, "user": user}, content=_abody_of(data))
        return await self._c._t.call(req)

    async def write_files(self, directory: str,
                          files: Union[Mapping[str, FileData], Sequence[Tuple[str, FileData]]], *,
                          user: Optional[str] = None) -> List[g.EntryInfo]:
        items = files.items() if isinstance(files, Mapping) else files
        parts = [("file", (name, _part_of(data), "application/octet-stream")) for name, data in items]
        req = build("uploadFiles", {"id": self._id}, {"path": directory, "user": user}, files=parts)
        return (await self._c._t.call(req))["items"]

    async def list(self, path: str, *, depth: Optional[int] = None) -> List[g.EntryInfo]:
        return (await self._c._call("listFiles", {"id": self._id}, {"path": path, "depth": depth}))["items"]

    async def stat(self, path: str) -> g.EntryInfo:
        return await self._c._call("statFile", {"id": self._id}, {"path": path})

    async def exists(self, path: str) -> bool:
        try:
            await self.stat(path)
            return True
        except NotFoundError:
            return False

    async def make_dir(self, path: str, *, user: Optional[str] = None) -> g.EntryInfo:
        return await self._c._call("makeDir", {"id": self._id}, {"user": user}, body={"path": path})

    async def rename(self, old_path: str, new_path: str) -> g.EntryInfo:
        return await self._c._call("moveFile", {"id": self._id}, body={"from": old_path, "to": new_path})

    async def remove(self, path: str) -> None:
        await self._c._call("removeFile", {"id": self._id}, {"path": path})

    async def watch(self, path: str, on_event: Callable[[g.FileEvent], Any], *,
                    recursive: bool = False) -> AsyncWatchHandle:
        """on_event (a function or a coroutine function) gets each change; see Files.watch."""
        cm = self._c._t.stream(build("watchFiles", {"id": self._id}, {"path": path, "recursive": recursive}))
        resp = await cm.__aenter__()
        return AsyncWatchHandle(cm, resp, on_event, path)


class AsyncPtyHandle:
    """A connection to a terminal; see PtyHandle."""

    def __init__(self, pty: "AsyncPty", session: PtySession) -> None:
        self._pty, self._s = pty, session

    @property
    def pid(self) -> int:
        return self._s.pid

    async def send_input(self, data: Union[str, bytes]) -> None:
        await self._s.send(to_bytes(data))

    async def resize(self, cols: int, rows: int) -> None:
        await self._s.resize(cols, rows)

    async def wait(self, timeout: Optional[float] = None) -> CommandResult:
        return await self._s.wait(timeout)

    async def disconnect(self) -> None:
        await self._s.disconnect()

    async def kill(self) -> None:
        await self._pty._c._call("killCommand", {"id": self._pty._id, "ref": self.pid})


class AsyncPty:
    """Terminals for asyncio; see Pty."""

    def __init__(self, client: AsyncClient, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    async def create(self, *, cols: int = 80, rows: int = 24, on_data: Optional[DataHandler] = None,
                     cmd: Optional[str] = None, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                     user: Optional[str] = None, tag: Optional[str] = None) -> AsyncPtyHandle:
        info: g.CommandInfo = await self._c._call("startPty", {"id": self._id},
                                                  body=pty_request(cols, rows, cmd, env, cwd, user, tag))
        try:
            return await self._connect(info["pid"], on_data)
        except BaseException:
            with contextlib.suppress(SbxError):
                await self._c._call("killCommand", {"id": self._id, "ref": info["pid"]})
            raise

    async def connect(self, ref: Union[int, str], *, on_data: Optional[DataHandler] = None) -> AsyncPtyHandle:
        info: g.CommandInfo = await self._c._call("getCommand", {"id": self._id, "ref": ref})
        return await self._connect(info["pid"], on_data)

    async def resize(self, ref: Union[int, str], cols: int, rows: int) -> None:
        await self._c._call("resizePty", {"id": self._id, "ref": ref}, body={"cols": cols, "rows": rows})

    async def _connect(self, pid: int, on_data: Optional[DataHandler]) -> AsyncPtyHandle:
        s = PtySession(pid, on_data)
        await s.open(self._c.url, self._c.api_key, build("attachPty", {"id": self._id, "ref": pid}).path)
        return AsyncPtyHandle(self, s)


class AsyncCode:
    """Code contexts for asyncio; see Code."""

    def __init__(self, client: AsyncClient, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    async def run(self, code: str, *, language: Optional[str] = None,
                  context: Union[str, g.CodeContext, None] = None, timeout: Optional[float] = None,
                  on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                  on_result: Optional[Callable[[Result], Any]] = None,
                  on_error: Optional[Callable[[ExecutionError], Any]] = None) -> Execution:
        b = ExecutionBuilder(on_stdout, on_stderr, on_result, on_error)
        async with self._c._t.stream(build("executeCode", {"id": self._id},
                                           body=code_request(code, language, context, timeout))) as resp:
            async for e in aiter_ndjson(resp):
                b.event(e)  # type: ignore[arg-type]
        return b.finish()

    async def create_context(self, *, language: Optional[str] = None, cwd: Optional[str] = None,
                             env: Optional[Mapping[str, str]] = None, user: Optional[str] = None) -> g.CodeContext:
        body = {k: v for k, v in (("language", language), ("cwd", cwd), ("env", dict(env or {})), ("user", user)) if v}
        return await self._c._call("createCodeContext", {"id": self._id}, body=body)

    async def list_contexts(self) -> List[g.CodeContext]:
        return (await self._c._call("listCodeContexts", {"id": self._id}))["items"]

    async def delete_context(self, context: Union[str, g.CodeContext]) -> None:
        await self._c._call("deleteCodeContext", {"id": self._id, "ctx": _ctx_id(context)})

    async def restart_context(self, context: Union[str, g.CodeContext]) -> g.CodeContext:
        return await self._c._call("restartCodeContext", {"id": self._id, "ctx": _ctx_id(context)})

    async def interrupt(self, context: Union[str, g.CodeContext]) -> None:
        await self._c._call("interruptCodeContext", {"id": self._id, "ctx": _ctx_id(context)})


class AsyncSnapshots:
    """Snapshots for asyncio; see Snapshots."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def list(self, *, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
                   cursor: Optional[str] = None) -> g.SnapshotList:
        return await self._c._call("listSnapshots", query={"sandboxID": sandbox_id, "limit": limit, "cursor": cursor})

    async def get(self, snapshot_id: str) -> g.Snapshot:
        return await self._c._call("getSnapshot", {"snapshot_id": snapshot_id})

    async def delete(self, snapshot_id: str) -> g.Snapshot:
        return await self._c._call("deleteSnapshot", {"snapshot_id": snapshot_id})


class AsyncVolumes:
    """Volumes for asyncio; see Volumes."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(self, name: str, size_mb: int, *, project_id: Optional[str] = None) -> g.Volume:
        body: Dict[str, Any] = {"name": name, "sizeMB": size_mb}
        if project_id:
            body["projectID"] = project_id
        return await self._c._call("createVolume", body=body)

    async def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> g.VolumeList:
        return await self._c._call("listVolumes", query={"limit": limit, "cursor": cursor})

    async def get(self, volume: str) -> g.Volume:
        return await self._c._call("getVolume", {"volume": volume})

    async def resize(self, volume: str, size_mb: int) -> g.Volume:
        return await self._c._call("resizeVolume", {"volume": volume}, body={"sizeMB": size_mb})

    async def delete(self, volume: str) -> g.Volume:
        return await self._c._call("deleteVolume", {"volume": volume})

    async def read_file(self, volume: str, path: str) -> bytes:
        return (await self._c._t.send(build("readVolumeFile", {"volume": volume}, {"path": path}))).content

    async def write_file(self, volume: str, path: str, data: AsyncFileData) -> g.EntryInfo:
        return await self._c._t.call(build("writeVolumeFile", {"volume": volume}, {"path": path},
                                           content=_abody_of(data)))

    async def list_files(self, volume: str, path: str = "/") -> List[g.EntryInfo]:
        return (await self._c._call("listVolumeFiles", {"volume": volume}, {"path": path}))["items"]


class AsyncRuntimes:
    """Runtimes for asyncio; see Runtimes."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client
        self._home: Optional[Tuple[str, str]] = None

    async def _where(self, org: Optional[str], workspace: Optional[str]) -> Dict[str, str]:
        if org is None or workspace is None:
            if self._home is None:
                me = await self._c.me()
                self._home = (me["org"]["name"], me["workspace"]["name"])
            org, workspace = org or self._home[0], workspace or self._home[1]
        return {"org": org, "workspace": workspace}

    async def list(self, *, org: Optional[str] = None, workspace: Optional[str] = None, limit: Optional[int] = None,
                   cursor: Optional[str] = None) -> g.RuntimeList:
        return await self._c._call("listRuntimes", await self._where(org, workspace), {"limit": limit, "cursor": cursor})

    async def get(self, runtime_id: str, *, org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        return await self._c._call("getRuntime", {**await self._where(org, workspace), "runtime_id": runtime_id})

    async def update(self, runtime_id: str, config: g.UpdateRuntimeRequest, *, org: Optional[str] = None,
                     workspace: Optional[str] = None) -> g.Runtime:
        return await self._c._call("updateRuntime", {**await self._where(org, workspace), "runtime_id": runtime_id},
                                   body=config)

    async def start(self, runtime_id: str, config: Optional[g.StartRuntimeRequest] = None, *,
                    org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        return await self._c._call("startRuntime", {**await self._where(org, workspace), "runtime_id": runtime_id},
                                   body=dict(config or {}), headers={"Idempotency-Key": str(uuid.uuid4())})

    async def _act(self, op: str, runtime_id: str, org: Optional[str], workspace: Optional[str]) -> g.Runtime:
        return await self._c._call(op, {**await self._where(org, workspace), "runtime_id": runtime_id})

    async def pause(self, runtime_id: str, *, org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        return await self._act("pauseRuntime", runtime_id, org, workspace)

    async def resume(self, runtime_id: str, *, org: Optional[str] = None,
                     workspace: Optional[str] = None) -> g.Runtime:
        return await self._act("resumeRuntime", runtime_id, org, workspace)

    async def reset(self, runtime_id: str, *, org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        return await self._act("resetRuntime", runtime_id, org, workspace)

    async def keepalive(self, runtime_id: str, extend: Optional[float] = None, *, org: Optional[str] = None,
                        workspace: Optional[str] = None) -> g.Runtime:
        body = {"extend_seconds": int(round(extend))} if extend else {}
        return await self._c._call("keepaliveRuntime", {**await self._where(org, workspace), "runtime_id": runtime_id},
                                   body=body)
