"""The synchronous API: Client, Sandbox and the services of a sandbox."""
from __future__ import annotations

import functools
import threading
import uuid
from typing import (Any, Literal, BinaryIO, Callable, ContextManager, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union, overload)

import httpx

from . import _generated as g
from ._core import NO_BODY, QueryValue, SyncTransport, build, iter_ndjson, resolve_config
from ._pty import DataHandler, PtySession, run_sync
from .errors import ConflictError, NotFoundError, SbxConnectionError, SbxError, StreamEndedError
from .models import (CommandOutput, CommandResult, Execution, ExecutionBuilder, ExecutionError, OutputHandler, Result,
                     code_request, command_request, create_request, pty_request, seconds, to_bytes)

__all__ = ["Client", "Sandbox", "Commands", "CommandHandle", "Files", "WatchHandle", "Pty", "PtyHandle", "Code",
           "Snapshots", "Volumes", "Runtimes"]

FileData = Union[str, bytes, bytearray, memoryview, BinaryIO, Iterable[bytes]]
CREATE_TRIES = 2  # a create whose connection failed before an answer is sent once more, with its key
UPLOAD_CHUNK = 1 << 20


class _dual:
    """A method that is a classmethod on the class and a method on an
    instance: Sandbox.connect(id, ...) and sandbox.connect(...)."""

    def __init__(self, on_class: Callable[..., Any]) -> None:
        self.on_class = on_class
        self.on_instance: Optional[Callable[..., Any]] = None
        functools.update_wrapper(self, on_class)  # type: ignore[arg-type]

    def instance(self, fn: Callable[..., Any]) -> "_dual":
        self.on_instance = fn
        return self

    def __get__(self, obj: Any, cls: Any) -> Any:
        if obj is None:
            return functools.partial(self.on_class, cls)
        assert self.on_instance is not None
        return functools.partial(self.on_instance, obj)


def _body_of(data: FileData) -> Any:
    """A request body for data: bytes as they are, text as UTF-8, a file read
    in chunks of 1 MiB, an iterable of bytes as it comes."""
    if isinstance(data, (str, bytes, bytearray, memoryview)):
        return to_bytes(data)
    read = getattr(data, "read", None)
    if read is not None:
        return iter(lambda: read(UPLOAD_CHUNK), b"")
    return data


def _part_of(data: FileData) -> Any:
    if isinstance(data, (str, bytes, bytearray, memoryview)):
        return to_bytes(data)
    if hasattr(data, "read"):
        return data
    return b"".join(data)  # type: ignore[arg-type]


# ---------------------------------------------------------------- clients

_shared: Dict[Tuple[str, str], "Client"] = {}
_shared_lock = threading.Lock()


class Client:
    """A connection to one sbx server (its URL and API key; by default
    SBX_URL and SBX_API_KEY). It is safe to share between threads; Sandbox
    methods given no client share one per URL and key."""

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None, *,
                 http_client: Optional[httpx.Client] = None) -> None:
        self._t = SyncTransport(url, api_key, http_client)
        self.snapshots = Snapshots(self)
        self.volumes = Volumes(self)
        self.runtimes = Runtimes(self)

    @classmethod
    def shared(cls, url: Optional[str] = None, api_key: Optional[str] = None) -> "Client":
        """The client this process shares for url and api_key."""
        k = resolve_config(url, api_key)
        with _shared_lock:
            c = _shared.get(k)
            if c is None:
                c = _shared[k] = cls(*k)
            return c

    @property
    def url(self) -> str:
        return self._t.url

    @property
    def api_key(self) -> str:
        return self._t.api_key

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, operation_id: "g.OperationId", *, path: Optional[Mapping[str, Any]] = None,
             query: Optional[Mapping[str, QueryValue]] = None, body: Any = NO_BODY,
             headers: Optional[Mapping[str, str]] = None, content: Optional[bytes] = None) -> Any:
        """Sends any operation of the OpenAPI document by its operationId and
        answers its decoded body: JSON as dicts and lists, NDJSON as a list,
        bytes for other media, None for no body. Raises an SbxError subclass
        for a refusal."""
        return self._t.call(build(operation_id, path, query, body, headers=headers, content=content))

    def _call(self, op: str, path: Optional[Mapping[str, Any]] = None, query: Optional[Mapping[str, QueryValue]] = None,
              body: Any = NO_BODY, **kw: Any) -> Any:
        return self._t.call(build(op, path, query, body, **kw))

    def me(self) -> g.Me:
        """Who the API key acts for, and the server's version."""
        return self._call("me")

    def list_sandboxes(self, *, state: Union[str, Sequence[str], None] = None, template: Optional[str] = None,
                       metadata: Optional[Mapping[str, str]] = None, limit: Optional[int] = None,
                       cursor: Optional[str] = None) -> g.SandboxList:
        """One page of the caller's sandboxes, newest first."""
        md = [f"{k}={v}" for k, v in sorted((metadata or {}).items())] or None
        st = [state] if isinstance(state, str) else state
        return self._call("listSandboxes", query={"state": st, "template": template, "metadata": md,
                                                  "limit": limit, "cursor": cursor})

    def get_sandbox(self, sandbox_id: str) -> g.Sandbox:
        """A sandbox with its timeline, by provider sandbox ID or UUID."""
        return self._call("getSandbox", {"id": sandbox_id})


# ---------------------------------------------------------------- the sandbox


class Sandbox:
    """A handle on one sandbox: what Sandbox.create and Sandbox.connect
    answer. Its methods keep ``data`` (the API's Sandbox) up to date; used
    as a context manager it deletes the sandbox on exit.

        with Sandbox.create("base", wait_ready=True) as sb:
            print(sb.commands.run("echo hi").stdout)
    """

    commands: "Commands"
    files: "Files"
    pty: "Pty"
    code: "Code"

    def __init__(self, data: g.Sandbox, client: Client) -> None:
        self._data = data
        self._client = client
        self.commands = Commands(client, data["id"])
        self.files = Files(client, data["id"])
        self.pty = Pty(client, data["id"])
        self.code = Code(client, data["id"])

    def __repr__(self) -> str:
        return f"<Sandbox {self.sandbox_id} {self.state}>"

    # -- creating and finding

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
               client: Optional[Client] = None) -> "Sandbox":
        """Starts a sandbox from template (or, with template None, from image
        or snapshot_id). timeout is its lifetime in seconds; wait_ready
        answers only once it runs. The request carries an Idempotency-Key
        (idempotency_key, else a new UUID) and is sent once more with it when
        the connection fails before an answer."""
        c = client or Client.shared(url, api_key)
        if snapshot_id and template == "base":
            template = None
        body = create_request(template, timeout=timeout, wait_ready=wait_ready, env_vars=env_vars, metadata=metadata,
                              auto_pause=auto_pause, cpu=cpu, memory_mb=memory_mb, disk_mb=disk_mb, gpu=gpu, kind=kind,
                              preview=preview, ports=ports, egress=egress, project_id=project_id, image=image,
                              snapshot_id=snapshot_id, volumes=volumes, warm_pool=warm_pool,
                              provider=provider)
        req = build("createSandbox", body=body, headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())})
        for attempt in range(1, CREATE_TRIES + 1):
            try:
                return cls(c._t.call(req), c)
            except SbxConnectionError:
                if attempt == CREATE_TRIES:
                    raise
        raise AssertionError("unreachable")

    @_dual
    def connect(cls, sandbox_id: str, *, timeout: Optional[float] = None, rotate_access_token: bool = False,
                url: Optional[str] = None, api_key: Optional[str] = None,
                client: Optional[Client] = None) -> "Sandbox":
        """Sandbox.connect(sandbox_id, timeout=...): a handle on an existing
        sandbox (by provider sandbox ID or UUID), resumed when paused, with
        fresh runtime access; timeout (seconds) is its new lifetime from now.

        sandbox.connect(timeout=...): the same for this handle, which it answers."""
        c = client or Client.shared(url, api_key)
        return cls(c._call("connectSandbox", {"id": sandbox_id}, body=_connect_body(timeout, rotate_access_token)), c)

    @connect.instance
    def connect(self, *, timeout: Optional[float] = None, rotate_access_token: bool = False) -> "Sandbox":
        self._data = self._client._call("connectSandbox", {"id": self.id},
                                        body=_connect_body(timeout, rotate_access_token))
        return self

    @classmethod
    def list(cls, *, state: Union[str, Sequence[str], None] = None, template: Optional[str] = None,
             metadata: Optional[Mapping[str, str]] = None, limit: Optional[int] = None, cursor: Optional[str] = None,
             url: Optional[str] = None, api_key: Optional[str] = None,
             client: Optional[Client] = None) -> g.SandboxList:
        """One page of the caller's sandboxes, newest first."""
        c = client or Client.shared(url, api_key)
        return c.list_sandboxes(state=state, template=template, metadata=metadata, limit=limit, cursor=cursor)

    # -- what it is

    @property
    def id(self) -> str:
        """The sbx UUID."""
        return self._data["id"]

    @property
    def sandbox_id(self) -> str:
        """The provider sandbox ID, the one `sbx sandbox` commands take."""
        return self._data["sandboxID"]

    @property
    def data(self) -> g.Sandbox:
        """The sandbox as the server last answered it."""
        return self._data

    @property
    def state(self) -> str:
        return self._data["state"]

    @property
    def client(self) -> Client:
        return self._client

    def info(self) -> g.Sandbox:
        """Fetches the sandbox afresh (its timeline too)."""
        self._data = self._client._call("getSandbox", {"id": self.id})
        return self._data

    # -- lifecycle

    def set_timeout(self, timeout: float) -> None:
        """Sets the sandbox's timeout to timeout seconds from now."""
        self._data = self._client._call("setSandboxTimeout", {"id": self.id}, body={"timeout": seconds(timeout)})

    def refresh(self, duration: Optional[float] = None) -> None:
        """Keeps the running sandbox alive at least duration seconds more (at
        most 3600; default the sandbox's timeout)."""
        body = {"duration": seconds(duration)} if duration else {}
        self._data = self._client._call("refreshSandbox", {"id": self.id}, body=body)

    def pause(self) -> None:
        """Pauses the sandbox, frozen in memory."""
        self._data = self._client._call("pauseSandbox", {"id": self.id}, body={})

    def hibernate(self) -> None:
        """Checkpoints the sandbox to disk and releases its memory; resume() restores it."""
        self._data = self._client._call("pauseSandbox", {"id": self.id}, body={"hibernate": True})

    def resume(self, timeout: Optional[float] = None) -> None:
        """Resumes the paused sandbox; timeout (seconds) None keeps its timeout."""
        body = {"timeout": seconds(timeout)} if timeout else {}
        self._data = self._client._call("resumeSandbox", {"id": self.id}, body=body)

    def set_egress(self, egress: g.Egress) -> None:
        """Replaces the sandbox's outbound policy, at once."""
        self._data = self._client._call("setSandboxEgress", {"id": self.id}, body=egress)

    def delete(self) -> None:
        """Kills the sandbox; its record stays."""
        self._data = self._client._call("deleteSandbox", {"id": self.id})

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._data.get("state") in ("killed", "failed"):
            return
        try:
            self.delete()
        except (NotFoundError, ConflictError):
            pass  # it ended already

    # -- observing

    def logs(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> g.LogPage:
        """A page of the sandbox's log, oldest first; pass next_cursor on."""
        return self._client._call("sandboxLogs", {"id": self.id}, {"cursor": cursor, "limit": limit})

    def follow_logs(self) -> Iterator[g.LogLine]:
        """The sandbox's whole log, then each line as it is added, until the
        sandbox ends (or the caller stops iterating)."""
        with self._client._t.stream(build("followSandboxLogs", {"id": self.id})) as resp:
            for line in iter_ndjson(resp):
                yield line  # type: ignore[misc]

    def metrics(self) -> g.Metrics:
        """A measure of the running sandbox now."""
        return self._client._call("sandboxMetrics", {"id": self.id})

    # -- previews

    def preview_url(self, port: int) -> str:
        """The preview URL of port (private unless the sandbox's preview is
        public: open it with traffic_token, an API key or a link)."""
        tpl = self._data.get("previewURL")
        if not tpl:
            raise SbxError(f"sandbox {self.sandbox_id} has no preview URL (is it running?)")
        return tpl.replace("{port}", str(port))

    @property
    def traffic_token(self) -> str:
        """Opens the sandbox's private previews (header X-Sbx-Traffic-Token)."""
        return self._data.get("trafficToken", "")

    def create_preview_link(self, port: int, *, expires: Optional[float] = None) -> g.PreviewLink:
        """A link to port that works with no other credentials for expires
        seconds (default an hour); its URL carries its token, shown only now."""
        body: Dict[str, Any] = {"port": port}
        if expires:
            body["expires"] = seconds(expires)
        return self._client._call("createPreviewLink", {"id": self.id}, body=body)

    def preview_links(self) -> List[g.PreviewLink]:
        """The sandbox's preview links, newest first, without their tokens."""
        return self._client._call("listPreviewLinks", {"id": self.id})["items"]

    def revoke_preview_link(self, link_id: str) -> g.PreviewLink:
        return self._client._call("revokePreviewLink", {"id": self.id, "link_id": link_id})

    # -- snapshots and forks

    def snapshot(self, *, name: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None,
                 files_only: bool = False) -> g.Snapshot:
        """Captures the sandbox, which goes on as it was, and answers the
        snapshot once ready; Sandbox.create(snapshot_id=...) starts from it.
        files_only leaves memory and processes out."""
        body: Dict[str, Any] = {}
        if name:
            body["name"] = name
        if metadata:
            body["metadata"] = dict(metadata)
        if files_only:
            body["memory"] = False
        return self._client._call("createSnapshot", {"id": self.id}, body=body)

    def fork(self, count: int = 1) -> List["Sandbox"]:
        """count running children, each with the sandbox's memory, processes
        and files; raises when none could be made."""
        res: g.ForkResult = self._client._call("forkSandbox", {"id": self.id}, body={"count": count})
        if not res["children"] and res["errors"]:
            raise SbxError("fork: " + "; ".join(res["errors"]))
        return [Sandbox(c, self._client) for c in res["children"]]

    # -- code

    def run_code(self, code: str, *, language: Optional[str] = None, context: Union[str, g.CodeContext, None] = None,
                 timeout: Optional[float] = None, on_stdout: Optional[OutputHandler] = None,
                 on_stderr: Optional[OutputHandler] = None, on_result: Optional[Callable[[Result], Any]] = None,
                 on_error: Optional[Callable[[ExecutionError], Any]] = None) -> Execution:
        """Runs code in a code context (default: the language's default one,
        python unless language says bash or javascript) and answers its
        Execution; state persists between runs. See Code.run."""
        return self.code.run(code, language=language, context=context, timeout=timeout, on_stdout=on_stdout,
                             on_stderr=on_stderr, on_result=on_result, on_error=on_error)


def _connect_body(timeout: Optional[float], rotate: bool) -> Dict[str, Any]:
    body: Dict[str, Any] = {}
    if timeout:
        body["timeout"] = seconds(timeout)
    if rotate:
        body["rotateAccessToken"] = True
    return body


# ---------------------------------------------------------------- commands


class _Following:
    """A stream read on a thread: a command's output or a watch."""

    def __init__(self, cm: ContextManager[httpx.Response], resp: httpx.Response) -> None:
        self._cm, self._resp = cm, resp
        self._done = threading.Event()
        self._disconnected = False
        self._error: Optional[BaseException] = None

    def _start(self, work: Callable[[httpx.Response], None]) -> None:
        def run() -> None:
            try:
                work(self._resp)
            except BaseException as e:  # noqa: BLE001 - reported by wait()
                self._error = e
            finally:
                try:
                    self._cm.__exit__(None, None, None)
                except Exception:  # noqa: BLE001
                    pass
                self._done.set()
        threading.Thread(target=run, daemon=True, name="sbx-sdk-stream").start()

    def _disconnect(self) -> None:
        self._disconnected = True
        try:
            self._resp.close()
        except Exception:  # noqa: BLE001
            pass

    def _join(self, timeout: Optional[float]) -> None:
        if not self._done.wait(timeout):
            raise TimeoutError(f"still running after {timeout} s")


class CommandHandle(_Following):
    """Follows a command started in the background or found by connect; the
    callbacks get its output on a thread of the SDK."""

    def __init__(self, commands: "Commands", info: g.CommandInfo, cm: ContextManager[httpx.Response],
                 resp: httpx.Response, out: CommandOutput) -> None:
        super().__init__(cm, resp)
        self._commands, self.info, self._out = commands, info, out
        self._result: Optional[CommandResult] = None

        def work(r: httpx.Response) -> None:
            for e in iter_ndjson(r):
                if self._disconnected:
                    return
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

    def wait(self, timeout: Optional[float] = None) -> CommandResult:
        """Waits (at most timeout seconds) for the command to end and answers
        how it did; a non-zero exit is no exception."""
        self._join(timeout)
        if self._disconnected:
            raise StreamEndedError(f"disconnected from command {self.pid}")
        if self._result is not None:
            return self._result
        raise self._error or StreamEndedError(f"command {self.pid}: the stream ended")

    def disconnect(self) -> None:
        """Stops following; the command goes on running."""
        self._disconnect()

    def kill(self) -> None:
        self._commands.kill(self.pid)

    def signal(self, signal: str) -> None:
        self._commands.signal(self.pid, signal)

    def send_stdin(self, data: Union[str, bytes]) -> None:
        self._commands.send_stdin(self.pid, data)

    def close_stdin(self) -> None:
        self._commands.close_stdin(self.pid)


class Commands:
    """Runs and controls processes in a sandbox, through its agent. Commands
    and terminals are found by ref: a PID, or the tag they started with."""

    def __init__(self, client: Client, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    @overload
    def run(self, cmd: Union[str, Sequence[str]], *, background: Literal[False] = False,
            env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None, user: Optional[str] = None,
            tag: Optional[str] = None, timeout: Optional[float] = None, stdin: bool = False,
            on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
            discard_output: bool = False) -> CommandResult: ...

    @overload
    def run(self, cmd: Union[str, Sequence[str]], *, background: Literal[True],
            env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None, user: Optional[str] = None,
            tag: Optional[str] = None, timeout: Optional[float] = None, stdin: bool = False,
            on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
            discard_output: bool = False) -> CommandHandle: ...

    def run(self, cmd: Union[str, Sequence[str]], *, background: bool = False,
            env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None, user: Optional[str] = None,
            tag: Optional[str] = None, timeout: Optional[float] = None, stdin: bool = False,
            on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
            discard_output: bool = False) -> Union[CommandResult, CommandHandle]:
        """Runs cmd (a command line, run by bash -l -c; or an argv, found on
        PATH) and waits for it to end, passing its output to on_stdout and
        on_stderr as it comes. With background=True it answers a
        CommandHandle once the command runs. timeout (seconds) kills it;
        stdin=True keeps its stdin open for send_stdin until close_stdin."""
        body = command_request(cmd, env=env, cwd=cwd, user=user, tag=tag, timeout=timeout, stdin=stdin,
                               background=background)
        if background:
            info: g.CommandInfo = self._c._call("startCommand", {"id": self._id}, body=body)
            try:
                return self._follow(info, on_stdout, on_stderr, discard_output)
            except BaseException:
                self._abandon(info["pid"])
                raise
        out = CommandOutput(0, on_stdout, on_stderr, not discard_output)
        with self._c._t.stream(build("startCommand", {"id": self._id}, body=body)) as resp:
            try:
                for e in iter_ndjson(resp):
                    if out.event(e):  # type: ignore[arg-type]
                        break
            except KeyboardInterrupt:
                if out.result.pid:
                    self._abandon(out.result.pid)
                raise
        return out.finish()

    def connect(self, ref: Union[int, str], *, on_stdout: Optional[OutputHandler] = None,
                on_stderr: Optional[OutputHandler] = None, discard_output: bool = False) -> CommandHandle:
        """Follows a running or recently ended command, by PID or tag: its
        output so far, then live."""
        return self._follow(self.get(ref), on_stdout, on_stderr, discard_output)

    def _follow(self, info: g.CommandInfo, on_stdout: Optional[OutputHandler], on_stderr: Optional[OutputHandler],
                discard: bool) -> CommandHandle:
        cm = self._c._t.stream(build("streamCommand", {"id": self._id, "ref": info["pid"]}))
        resp = cm.__enter__()
        return CommandHandle(self, info, cm, resp, CommandOutput(info["pid"], on_stdout, on_stderr, not discard))

    def _abandon(self, pid: int) -> None:
        try:
            self.kill(pid)
        except SbxError:
            pass

    def list(self) -> List[g.CommandInfo]:
        """The running commands and terminals, and the recently ended ones."""
        return self._c._call("listCommands", {"id": self._id})["items"]

    def get(self, ref: Union[int, str]) -> g.CommandInfo:
        """Describes one command or terminal."""
        return self._c._call("getCommand", {"id": self._id, "ref": ref})

    def kill(self, ref: Union[int, str]) -> g.CommandInfo:
        """SIGKILL to the command's whole process group."""
        return self._c._call("killCommand", {"id": self._id, "ref": ref})

    def signal(self, ref: Union[int, str], signal: str) -> g.CommandInfo:
        """Sends a signal, named without SIG (TERM, INT, HUP…) or by number."""
        return self._c._call("signalCommand", {"id": self._id, "ref": ref}, body={"signal": signal})

    def send_stdin(self, ref: Union[int, str], data: Union[str, bytes]) -> None:
        """Writes data to the stdin of a command started with stdin=True, or to a terminal."""
        self._c._call("writeStdin", {"id": self._id, "ref": ref}, content=to_bytes(data))

    def close_stdin(self, ref: Union[int, str]) -> None:
        """Closes the command's stdin: it reads end of file."""
        self._c._call("closeStdin", {"id": self._id, "ref": ref})


# ---------------------------------------------------------------- files


class WatchHandle(_Following):
    """A running watch; on_event gets each change on a thread of the SDK."""

    def __init__(self, cm: ContextManager[httpx.Response], resp: httpx.Response,
                 on_event: Callable[[g.FileEvent], Any], path: str) -> None:
        super().__init__(cm, resp)
        from .errors import SandboxStoppedError

        def work(r: httpx.Response) -> None:
            for e in iter_ndjson(r):
                if e.get("type") == "error":
                    raise SandboxStoppedError(e.get("error", "the sandbox stopped"))
                on_event(e)  # type: ignore[arg-type]
            if not self._disconnected:
                raise StreamEndedError(f"the agent ended the watch of {path}")
        self._start(work)

    def stop(self) -> None:
        """Ends the watch; no event is delivered once it returns."""
        self._disconnect()
        self._done.wait(10)

    def wait(self, timeout: Optional[float] = None) -> None:
        """Waits for the watch to end; raises what ended it, unless stop() did."""
        self._join(timeout)
        if self._error is not None and not self._disconnected:
            raise self._error

    def __enter__(self) -> "WatchHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class Files:
    """A sandbox's filesystem, through its agent. Paths are absolute; a
    relative one is relative to /workspace. A missing path raises
    NotFoundError."""

    def __init__(self, client: Client, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    def read(self, path: str, *, encoding: str = "utf-8") -> str:
        """A whole file, as text."""
        return self.read_bytes(path).decode(encoding)

    def read_bytes(self, path: str) -> bytes:
        """A whole file, as bytes."""
        return self._c._t.send(build("readFile", {"id": self._id}, {"path": path})).content

    def read_stream(self, path: str, *, chunk_size: int = 1 << 16) -> ContextManager[Iterator[bytes]]:
        """A file as it streams: ``with files.read_stream(p) as chunks: for c in chunks: ...``"""
        import contextlib

        @contextlib.contextmanager
        def cm() -> Iterator[Iterator[bytes]]:
            with self._c._t.stream(build("readFile", {"id": self._id}, {"path": path})) as resp:
                yield resp.iter_bytes(chunk_size)
        return cm()

    def write(self, path: str, data: FileData, *, user: Optional[str] = None,
              mode: Optional[str] = None) -> g.EntryInfo:
        """Writes data (text, bytes, a binary file or an iterable of bytes,
        streamed) to path, making its parents, and describes the file."""
        req = build("writeFile", {"id": self._id}, {"path": path, "mode": mode, "user": user}, content=_body_of(data))
        return self._c._t.call(req)

    def write_files(self, directory: str, files: Union[Mapping[str, FileData], Sequence[Tuple[str, FileData]]], *,
                    user: Optional[str] = None) -> List[g.EntryInfo]:
        """Writes several files into directory in one multipart request; each
        name is a path under it."""
        items = files.items() if isinstance(files, Mapping) else files
        parts = [("file", (name, _part_of(data), "application/octet-stream")) for name, data in items]
        req = build("uploadFiles", {"id": self._id}, {"path": directory, "user": user}, files=parts)
        return self._c._t.call(req)["items"]

    def list(self, path: str, *, depth: Optional[int] = None) -> List[g.EntryInfo]:
        """The entries under path to depth levels (default 1), sorted by path."""
        return self._c._call("listFiles", {"id": self._id}, {"path": path, "depth": depth})["items"]

    def stat(self, path: str) -> g.EntryInfo:
        """Describes one entry."""
        return self._c._call("statFile", {"id": self._id}, {"path": path})

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
            return True
        except NotFoundError:
            return False

    def make_dir(self, path: str, *, user: Optional[str] = None) -> g.EntryInfo:
        """Makes a directory and its parents; an existing one is no error."""
        return self._c._call("makeDir", {"id": self._id}, {"user": user}, body={"path": path})

    def rename(self, old_path: str, new_path: str) -> g.EntryInfo:
        """Moves an entry and describes it at its destination."""
        return self._c._call("moveFile", {"id": self._id}, body={"from": old_path, "to": new_path})

    def remove(self, path: str) -> None:
        """Removes an entry, a directory with all it holds."""
        self._c._call("removeFile", {"id": self._id}, {"path": path})

    def watch(self, path: str, on_event: Callable[[g.FileEvent], Any], *, recursive: bool = False) -> WatchHandle:
        """Calls on_event for each change under path (create, write, remove,
        rename, chmod) until stop(); answers once the watch is set up."""
        cm = self._c._t.stream(build("watchFiles", {"id": self._id}, {"path": path, "recursive": recursive}))
        resp = cm.__enter__()
        return WatchHandle(cm, resp, on_event, path)


# ---------------------------------------------------------------- terminals


class PtyHandle:
    """A connection to a terminal; on_data gets its output (bytes) on the
    SDK's event loop thread."""

    def __init__(self, pty: "Pty", session: PtySession) -> None:
        self._pty, self._s = pty, session

    @property
    def pid(self) -> int:
        return self._s.pid

    def send_input(self, data: Union[str, bytes]) -> None:
        """Types data into the terminal."""
        run_sync(self._s.send(to_bytes(data)))

    def resize(self, cols: int, rows: int) -> None:
        """Sets the terminal's size (a control message on the WebSocket)."""
        run_sync(self._s.resize(cols, rows))

    def wait(self, timeout: Optional[float] = None) -> CommandResult:
        """Waits for the terminal to exit; its output went to on_data."""
        return run_sync(self._s.wait(timeout))

    def disconnect(self) -> None:
        """Closes the connection; the terminal goes on running."""
        run_sync(self._s.disconnect())

    def kill(self) -> None:
        self._pty._c._call("killCommand", {"id": self._pty._id, "ref": self.pid})


class Pty:
    """Interactive terminals in a sandbox. A terminal is a command with a
    tty: Commands lists, signals and kills it too."""

    def __init__(self, client: Client, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    def create(self, *, cols: int = 80, rows: int = 24, on_data: Optional[DataHandler] = None,
               cmd: Optional[str] = None, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
               user: Optional[str] = None, tag: Optional[str] = None) -> PtyHandle:
        """Starts a terminal (default a login shell) and connects to it."""
        info: g.CommandInfo = self._c._call("startPty", {"id": self._id},
                                            body=pty_request(cols, rows, cmd, env, cwd, user, tag))
        try:
            return self._connect(info["pid"], on_data)
        except BaseException:
            try:
                self._c._call("killCommand", {"id": self._id, "ref": info["pid"]})
            except SbxError:
                pass
            raise

    def connect(self, ref: Union[int, str], *, on_data: Optional[DataHandler] = None) -> PtyHandle:
        """Connects to a running terminal by PID or tag: on_data gets what it
        has buffered, then its output live."""
        info: g.CommandInfo = self._c._call("getCommand", {"id": self._id, "ref": ref})
        return self._connect(info["pid"], on_data)

    def resize(self, ref: Union[int, str], cols: int, rows: int) -> None:
        """Sets a terminal's size (over HTTP)."""
        self._c._call("resizePty", {"id": self._id, "ref": ref}, body={"cols": cols, "rows": rows})

    def _connect(self, pid: int, on_data: Optional[DataHandler]) -> PtyHandle:
        s = PtySession(pid, on_data)
        req = build("attachPty", {"id": self._id, "ref": pid})
        run_sync(s.open(self._c.url, self._c.api_key, req.path))
        return PtyHandle(self, s)


# ---------------------------------------------------------------- code


class Code:
    """Code contexts: stateful interpreters (Jupyter kernels for python)
    whose variables, imports and directory persist between runs."""

    def __init__(self, client: Client, sandbox_id: str) -> None:
        self._c, self._id = client, sandbox_id

    def run(self, code: str, *, language: Optional[str] = None, context: Union[str, g.CodeContext, None] = None,
            timeout: Optional[float] = None, on_stdout: Optional[OutputHandler] = None,
            on_stderr: Optional[OutputHandler] = None, on_result: Optional[Callable[[Result], Any]] = None,
            on_error: Optional[Callable[[ExecutionError], Any]] = None) -> Execution:
        """Runs code and follows it to its end, one callback per event type;
        timeout (seconds) interrupts it (the context lives on)."""
        b = ExecutionBuilder(on_stdout, on_stderr, on_result, on_error)
        with self._c._t.stream(build("executeCode", {"id": self._id},
                                     body=code_request(code, language, context, timeout))) as resp:
            for e in iter_ndjson(resp):
                b.event(e)  # type: ignore[arg-type]
        return b.finish()

    def create_context(self, *, language: Optional[str] = None, cwd: Optional[str] = None,
                       env: Optional[Mapping[str, str]] = None, user: Optional[str] = None) -> g.CodeContext:
        """Makes a code context (its interpreter starts with its first run)."""
        body = {k: v for k, v in (("language", language), ("cwd", cwd), ("env", dict(env or {})), ("user", user)) if v}
        return self._c._call("createCodeContext", {"id": self._id}, body=body)

    def list_contexts(self) -> List[g.CodeContext]:
        return self._c._call("listCodeContexts", {"id": self._id})["items"]

    def delete_context(self, context: Union[str, g.CodeContext]) -> None:
        self._c._call("deleteCodeContext", {"id": self._id, "ctx": _ctx_id(context)})

    def restart_context(self, context: Union[str, g.CodeContext]) -> g.CodeContext:
        """A new interpreter for the context, its state gone."""
        return self._c._call("restartCodeContext", {"id": self._id, "ctx": _ctx_id(context)})

    def interrupt(self, context: Union[str, g.CodeContext]) -> None:
        """Interrupts what the context runs; it lives on."""
        self._c._call("interruptCodeContext", {"id": self._id, "ctx": _ctx_id(context)})


def _ctx_id(context: Union[str, g.CodeContext]) -> str:
    return context if isinstance(context, str) else context["id"]


# ---------------------------------------------------------------- other resources


class Snapshots:
    """The snapshots the key reaches (Sandbox.snapshot makes them)."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def list(self, *, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
             cursor: Optional[str] = None) -> g.SnapshotList:
        return self._c._call("listSnapshots", query={"sandboxID": sandbox_id, "limit": limit, "cursor": cursor})

    def get(self, snapshot_id: str) -> g.Snapshot:
        return self._c._call("getSnapshot", {"snapshot_id": snapshot_id})

    def delete(self, snapshot_id: str) -> g.Snapshot:
        """Deletes a snapshot; sandboxes started from it go on."""
        return self._c._call("deleteSnapshot", {"snapshot_id": snapshot_id})


class Volumes:
    """Persistent volumes of a project, mounted by Sandbox.create(volumes=[{"name": ..., "path": ...}])."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def create(self, name: str, size_mb: int, *, project_id: Optional[str] = None) -> g.Volume:
        body: Dict[str, Any] = {"name": name, "sizeMB": size_mb}
        if project_id:
            body["projectID"] = project_id
        return self._c._call("createVolume", body=body)

    def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> g.VolumeList:
        return self._c._call("listVolumes", query={"limit": limit, "cursor": cursor})

    def get(self, volume: str) -> g.Volume:
        """A volume by ID, or by name in the key's project."""
        return self._c._call("getVolume", {"volume": volume})

    def resize(self, volume: str, size_mb: int) -> g.Volume:
        return self._c._call("resizeVolume", {"volume": volume}, body={"sizeMB": size_mb})

    def delete(self, volume: str) -> g.Volume:
        return self._c._call("deleteVolume", {"volume": volume})

    def read_file(self, volume: str, path: str) -> bytes:
        return self._c._t.send(build("readVolumeFile", {"volume": volume}, {"path": path})).content

    def write_file(self, volume: str, path: str, data: FileData) -> g.EntryInfo:
        return self._c._t.call(build("writeVolumeFile", {"volume": volume}, {"path": path}, content=_body_of(data)))

    def list_files(self, volume: str, path: str = "/") -> List[g.EntryInfo]:
        return self._c._call("listVolumeFiles", {"volume": volume}, {"path": path})["items"]


class Runtimes:
    """Runtimes: a workspace's durable environments, whose sandbox comes and
    goes. org and workspace (IDs or names) default to the key's."""

    def __init__(self, client: Client) -> None:
        self._c = client
        self._home: Optional[Tuple[str, str]] = None

    def _where(self, org: Optional[str], workspace: Optional[str]) -> Dict[str, str]:
        if org is None or workspace is None:
            if self._home is None:
                me = self._c.me()
                self._home = (me["org"]["name"], me["workspace"]["name"])
            org, workspace = org or self._home[0], workspace or self._home[1]
        return {"org": org, "workspace": workspace}

    def list(self, *, org: Optional[str] = None, workspace: Optional[str] = None, limit: Optional[int] = None,
             cursor: Optional[str] = None) -> g.RuntimeList:
        return self._c._call("listRuntimes", self._where(org, workspace), {"limit": limit, "cursor": cursor})

    def get(self, runtime_id: str, *, org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        return self._c._call("getRuntime", {**self._where(org, workspace), "runtime_id": runtime_id})

    def update(self, runtime_id: str, config: g.UpdateRuntimeRequest, *, org: Optional[str] = None,
               workspace: Optional[str] = None) -> g.Runtime:
        """Replaces the fields of the runtime's configuration that config sets."""
        return self._c._call("updateRuntime", {**self._where(org, workspace), "runtime_id": runtime_id}, body=config)

    def start(self, runtime_id: str, config: Optional[g.StartRuntimeRequest] = None, *, org: Optional[str] = None,
              workspace: Optional[str] = None) -> g.Runtime:
        """Provisions a sandbox for the idle runtime; answers once it is ready."""
        return self._c._call("startRuntime", {**self._where(org, workspace), "runtime_id": runtime_id},
                             body=dict(config or {}), headers={"Idempotency-Key": str(uuid.uuid4())})

    def _act(self, op: str, runtime_id: str, org: Optional[str], workspace: Optional[str]) -> g.Runtime:
        return self._c._call(op, {**self._where(org, workspace), "runtime_id": runtime_id})

    def pause(self, runtime_id: str, *, org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        return self._act("pauseRuntime", runtime_id, org, workspace)

    def resume(self, runtime_id: str, *, org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        return self._act("resumeRuntime", runtime_id, org, workspace)

    def reset(self, runtime_id: str, *, org: Optional[str] = None, workspace: Optional[str] = None) -> g.Runtime:
        """Kills the runtime's sandbox and leaves the runtime idle."""
        return self._act("resetRuntime", runtime_id, org, workspace)

    def keepalive(self, runtime_id: str, extend: Optional[float] = None, *, org: Optional[str] = None,
                  workspace: Optional[str] = None) -> g.Runtime:
        """Keeps the running sandbox alive extend seconds more (default the runtime's timeout)."""
        body = {"extend_seconds": int(round(extend))} if extend else {}
        return self._c._call("keepaliveRuntime", {**self._where(org, workspace), "runtime_id": runtime_id}, body=body)
