"""Results the SDK builds from the API's answers and streams; the wire types
themselves are the TypedDicts of sbx_sdk.types (generated)."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ._generated import CodeEvent, CommandEvent, CreateSandboxRequest, Egress, GPU, Image, Preview, VolumeMount
from .errors import SandboxStoppedError, StreamEndedError

__all__ = ["CommandResult", "Execution", "Result", "ExecutionError", "OutputHandler"]

OutputHandler = Callable[[str], Any]


@dataclass
class CommandResult:
    """How a command (or a terminal) ended, with its output.

    A command that ran is never an exception, whatever its exit: exit_code is
    -1 when a signal killed it (signal names it, e.g. ``KILL``) and error says
    why it ended other than by exiting (e.g. a timeout).
    """

    pid: int
    stdout: str = ""
    stderr: str = ""
    exit_code: int = -1
    signal: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether it exited 0."""
        return self.exit_code == 0


class CommandOutput:
    """Gathers a command's NDJSON stream (CommandEvents) into its result,
    passing output to the callbacks as it comes."""

    def __init__(self, pid: int = 0, on_stdout: Optional[OutputHandler] = None,
                 on_stderr: Optional[OutputHandler] = None, keep: bool = True) -> None:
        self.result = CommandResult(pid=pid)
        self.on_stdout, self.on_stderr, self.keep = on_stdout, on_stderr, keep
        self._out: List[bytes] = []
        self._err: List[bytes] = []
        self.ended = False

    def event(self, e: CommandEvent) -> bool:
        """Takes one event; True once the end came."""
        t = e.get("type")
        if t == "start":
            self.result.pid = int(e.get("pid", 0))
        elif t == "stdout" or t == "stderr":
            data = base64.b64decode(e.get("data", "")) if e.get("data") else b""
            if self.keep:
                (self._out if t == "stdout" else self._err).append(data)
            fn = self.on_stdout if t == "stdout" else self.on_stderr
            if fn is not None:
                fn(data.decode("utf-8", "replace"))
        elif t == "error":
            raise SandboxStoppedError(e.get("error", "the sandbox stopped"))
        elif t == "end":
            self.ended = True
            self.result.exit_code = int(e["exitCode"]) if e.get("exitCode") is not None else -1
            self.result.signal = e.get("signal", "")
            self.result.error = e.get("error", "")
            return True
        return False

    def finish(self) -> CommandResult:
        if not self.ended:
            raise StreamEndedError(f"the stream of command {self.result.pid} ended before the command did")
        self.result.stdout = b"".join(self._out).decode("utf-8", "replace")
        self.result.stderr = b"".join(self._err).decode("utf-8", "replace")
        return self.result


@dataclass
class Result:
    """A result of running code: a MIME bundle. is_main_result marks the
    value of the last expression (else something displayed, e.g. a figure)."""

    data: Dict[str, Any]
    is_main_result: bool = False

    def _get(self, mime: str) -> Optional[str]:
        v = self.data.get(mime)
        return v if isinstance(v, str) else None

    @property
    def text(self) -> Optional[str]:
        return self._get("text/plain")

    @property
    def html(self) -> Optional[str]:
        return self._get("text/html")

    @property
    def markdown(self) -> Optional[str]:
        return self._get("text/markdown")

    @property
    def svg(self) -> Optional[str]:
        return self._get("image/svg+xml")

    @property
    def png(self) -> Optional[str]:
        """The PNG, base64 encoded, as the interpreter gave it."""
        return self._get("image/png")

    @property
    def jpeg(self) -> Optional[str]:
        return self._get("image/jpeg")

    @property
    def json(self) -> Any:
        return self.data.get("application/json")

    def png_bytes(self) -> Optional[bytes]:
        """The PNG's bytes."""
        return base64.b64decode(self.png) if self.png else None

    def formats(self) -> List[str]:
        return sorted(self.data)


@dataclass
class ExecutionError:
    """The error code raised: name (e.g. ZeroDivisionError), value and traceback lines."""

    name: str
    value: str
    traceback: List[str]


@dataclass
class Execution:
    """What running code gave: its output, results and error, and its end
    (status, context, execution count, duration)."""

    stdout: str = ""
    stderr: str = ""
    results: List[Result] = field(default_factory=list)
    error: Optional[ExecutionError] = None
    end: Dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> Optional[str]:
        """The text/plain of the last expression's value, if any."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None

    @property
    def status(self) -> str:
        """ok, error, interrupted or timeout."""
        return str(self.end.get("status", ""))

    @property
    def context_id(self) -> str:
        return str(self.end.get("contextId", ""))

    @property
    def execution_count(self) -> int:
        return int(self.end.get("executionCount", 0))


class ExecutionBuilder:
    """Gathers an execution's NDJSON stream (CodeEvents) into an Execution,
    calling one callback per event type."""

    def __init__(self, on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                 on_result: Optional[Callable[[Result], Any]] = None,
                 on_error: Optional[Callable[[ExecutionError], Any]] = None) -> None:
        self.ex = Execution()
        self.on_stdout, self.on_stderr, self.on_result, self.on_error = on_stdout, on_stderr, on_result, on_error
        self.ended = False

    def event(self, e: CodeEvent) -> None:
        t = e.get("type")
        if t == "stdout":
            self.ex.stdout += e.get("text", "")
            if self.on_stdout:
                self.on_stdout(e.get("text", ""))
        elif t == "stderr":
            self.ex.stderr += e.get("text", "")
            if self.on_stderr:
                self.on_stderr(e.get("text", ""))
        elif t == "result":
            r = Result(data=dict(e.get("data") or {}), is_main_result=bool(e.get("isMainResult")))
            self.ex.results.append(r)
            if self.on_result:
                self.on_result(r)
        elif t == "error":
            if e.get("error") and not e.get("name"):  # serve's last line: the sandbox stopped
                raise SandboxStoppedError(str(e["error"]))
            err = ExecutionError(e.get("name", ""), e.get("value", ""), list(e.get("traceback") or []))
            self.ex.error = err
            if self.on_error:
                self.on_error(err)
        elif t == "end":
            self.ex.end = dict(e)
            self.ended = True

    def finish(self) -> Execution:
        if not self.ended:
            raise StreamEndedError("the execution's stream ended before the execution did")
        return self.ex


def seconds(v: Optional[float]) -> Optional[int]:
    """Whole seconds, rounded up; None for None or <= 0 (the server's default)."""
    if v is None or v <= 0:
        return None
    s = int(v)
    return s if s == v else s + 1


def create_request(template: Optional[str], *, timeout: Optional[float], wait_ready: bool,
                   env_vars: Optional[Mapping[str, str]], metadata: Optional[Mapping[str, str]],
                   auto_pause: bool, cpu: Optional[float], memory_mb: Optional[int], disk_mb: Optional[int],
                   gpu: Optional[GPU], kind: Optional[str], preview: Optional[Preview], ports: Optional[Sequence[int]],
                   egress: Optional[Egress], project_id: Optional[str], image: Union[Image, str, None],
                   snapshot_id: Optional[str], volumes: Optional[Sequence[VolumeMount]],
                   warm_pool: Optional[str], provider: Optional[str] = None) -> CreateSandboxRequest:
    body: CreateSandboxRequest = {}
    if template:
        body["templateID"] = template
    t = seconds(timeout)
    if t is not None:
        body["timeout"] = t
    if wait_ready:
        body["waitReady"] = True
    if env_vars:
        body["envVars"] = dict(env_vars)
    if metadata:
        body["metadata"] = dict(metadata)
    if auto_pause:
        body["autoPause"] = True
    if cpu:
        body["cpu"] = cpu
    if memory_mb:
        body["memoryMB"] = memory_mb
    if disk_mb:
        body["diskMB"] = disk_mb
    if gpu:
        body["gpu"] = gpu
    if kind:
        body["kind"] = kind  # type: ignore[typeddict-item]
    if preview:
        body["preview"] = preview
    if ports:
        body["ports"] = list(ports)
    if egress:
        body["egress"] = egress
    if project_id:
        body["projectID"] = project_id
    if image:
        body["image"] = {"uri": image} if isinstance(image, str) else image
    if snapshot_id:
        body["snapshotID"] = snapshot_id
    if volumes:
        body["volumes"] = list(volumes)
    if warm_pool:
        body["warmPool"] = warm_pool  # type: ignore[typeddict-item]
    if provider:
        body["provider"] = provider
    return body


def command_request(cmd: Union[str, Sequence[str]], *, env: Optional[Mapping[str, str]], cwd: Optional[str],
                    user: Optional[str], tag: Optional[str], timeout: Optional[float], stdin: bool,
                    background: bool) -> Dict[str, Any]:
    body: Dict[str, Any] = {}
    if isinstance(cmd, str):
        body["cmd"] = cmd
    else:
        body["args"] = list(cmd)
    if env:
        body["env"] = dict(env)
    if cwd:
        body["cwd"] = cwd
    if user:
        body["user"] = user
    if tag:
        body["tag"] = tag
    t = seconds(timeout)
    if t:
        body["timeout"] = t
    if stdin:
        body["stdin"] = True
    if background:
        body["background"] = True
    return body


def pty_request(cols: int, rows: int, cmd: Optional[str], env: Optional[Mapping[str, str]], cwd: Optional[str],
                user: Optional[str], tag: Optional[str]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"cols": cols or 80, "rows": rows or 24}
    for k, v in (("cmd", cmd), ("cwd", cwd), ("user", user), ("tag", tag)):
        if v:
            body[k] = v
    if env:
        body["env"] = dict(env)
    return body


def code_request(code: str, language: Optional[str], context: Any, timeout: Optional[float]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"code": code}
    if context:
        body["contextId"] = context if isinstance(context, str) else context["id"]
    if language:
        body["language"] = language
    t = seconds(timeout)
    if t:
        body["timeout"] = t
    return body


def to_bytes(data: Union[str, bytes, bytearray, memoryview]) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)
