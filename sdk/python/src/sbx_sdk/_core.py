"""What the sync and async APIs share: configuration, requests built from
the generated operation table, the HTTP transports and NDJSON streams."""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote

import httpx

from ._generated import OPERATIONS, Operation
from .errors import SbxConnectionError, error_from_response

__version__ = "0.1.0"

DEFAULT_URL = "http://127.0.0.1:7070"
USER_AGENT = f"sbx-python-sdk/{__version__}"
NDJSON = "application/x-ndjson"

QueryValue = Union[str, int, float, bool, Sequence[Union[str, int]], None]


class _NoBody:
    def __repr__(self) -> str:
        return "NO_BODY"


NO_BODY: Any = _NoBody()


def resolve_config(url: Optional[str], api_key: Optional[str]) -> Tuple[str, str]:
    """The server's URL and API key: the arguments, else SBX_URL and
    SBX_API_KEY, else the default URL and no key."""
    url = url or os.environ.get("SBX_URL") or DEFAULT_URL
    key = api_key if api_key is not None else os.environ.get("SBX_API_KEY", "")
    return url.rstrip("/"), key


def default_timeout() -> httpx.Timeout:
    # No overall bound, as the Go client: a create with waitReady, a command
    # run or a stream lasts as long as it lasts; connecting is bounded.
    return httpx.Timeout(None, connect=30.0)


@dataclass
class Request:
    """One request, ready for either transport."""

    method: str
    path: str
    query: List[Tuple[str, str]] = field(default_factory=list)
    headers: Dict[str, str] = field(default_factory=dict)
    json: Any = NO_BODY
    content: Any = None  # bytes, or an iterator of bytes (sync or async)
    files: Any = None  # multipart parts, as httpx takes them
    op: Optional[Operation] = None


def _query_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def build(op_id: str, path: Optional[Mapping[str, Any]] = None, query: Optional[Mapping[str, QueryValue]] = None,
          body: Any = NO_BODY, *, headers: Optional[Mapping[str, str]] = None, content: Any = None,
          files: Any = None) -> Request:
    """A request for the operation op_id of the OpenAPI document.

    path fills the path's parameters (each escaped as one segment); query's
    None values are left out and sequences repeat the parameter; body is
    sent as JSON (an operation whose JSON body is required gets {} when
    body is left out); content is a raw body, files a multipart one.
    """
    try:
        op = OPERATIONS[op_id]
    except KeyError:
        raise ValueError(f"unknown operation {op_id!r}: the OpenAPI document has no such operationId") from None
    path = dict(path or {})
    missing = [p for p in op.path_params if p not in path]
    extra = [p for p in path if p not in op.path_params]
    if missing or extra:
        raise ValueError(f"{op_id}: path parameters {list(op.path_params)} expected, got {sorted(path)}")
    target = op.path
    for name in op.path_params:
        target = target.replace("{" + name + "}", quote(str(path[name]), safe=""))
    q: List[Tuple[str, str]] = []
    for k, v in (query or {}).items():
        if k not in op.query_params:
            raise ValueError(f"{op_id} takes no query parameter {k!r} (it takes {list(op.query_params)})")
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            q.extend((k, _query_text(x)) for x in v)
        else:
            q.append((k, _query_text(v)))
    h = dict(headers or {})
    if body is NO_BODY and op.body_media == "application/json" and op.body_required and content is None:
        body = {}
    return Request(op.method, target, q, h, body, content, files, op)


def _kwargs(req: Request, key: str, accept_json: bool) -> Dict[str, Any]:
    headers = {"User-Agent": USER_AGENT}
    if key:
        headers["Authorization"] = "Bearer " + key
    if accept_json:
        headers["Accept"] = "application/json"
    kw: Dict[str, Any] = {"params": req.query or None}
    if req.json is not NO_BODY:
        kw["content"] = json.dumps(req.json, separators=(",", ":")).encode()
        headers["Content-Type"] = "application/json"
    elif req.files is not None:
        kw["files"] = req.files
    elif req.content is not None:
        kw["content"] = req.content
        headers["Content-Type"] = "application/octet-stream"
    headers.update(req.headers)
    kw["headers"] = headers
    return kw


def decode(req: Request, resp: httpx.Response) -> Any:
    """The body of a 2xx answer: JSON decoded, NDJSON as a list, None when
    empty, else bytes."""
    if resp.status_code == 204 or not resp.content:
        return None
    ctype = resp.headers.get("content-type", "").split(";")[0].strip()
    if ctype == "application/json":
        return resp.json()
    if ctype == NDJSON:
        return [json.loads(line) for line in resp.text.splitlines() if line.strip()]
    if ctype.startswith("text/"):
        return resp.text
    return resp.content


class SyncTransport:
    """Sends requests with one httpx.Client (pooled connections)."""

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None,
                 http_client: Optional[httpx.Client] = None) -> None:
        self.url, self.api_key = resolve_config(url, api_key)
        self._own = http_client is None
        self.http = http_client or httpx.Client(timeout=default_timeout())

    def close(self) -> None:
        if self._own:
            self.http.close()

    def send(self, req: Request) -> httpx.Response:
        """Sends req and answers its 2xx response, read; else raises."""
        try:
            resp = self.http.request(req.method, self.url + req.path, **_kwargs(req, self.api_key, True))
        except httpx.TransportError as e:
            raise SbxConnectionError(f"{req.method} {req.path}: {e}") from e
        if not 200 <= resp.status_code < 300:
            raise error_from_response(resp.status_code, resp.content, resp.reason_phrase)
        return resp

    def call(self, req: Request) -> Any:
        return decode(req, self.send(req))

    @contextlib.contextmanager
    def stream(self, req: Request) -> Iterator[httpx.Response]:
        """Sends req and yields its 2xx response with its body still to read."""
        try:
            cm = self.http.stream(req.method, self.url + req.path, **_kwargs(req, self.api_key, False))
            resp = cm.__enter__()
        except httpx.TransportError as e:
            raise SbxConnectionError(f"{req.method} {req.path}: {e}") from e
        try:
            if not 200 <= resp.status_code < 300:
                raise error_from_response(resp.status_code, resp.read(), resp.reason_phrase)
            yield resp
        finally:
            cm.__exit__(None, None, None)


def iter_ndjson(resp: httpx.Response) -> Iterator[Dict[str, Any]]:
    for line in resp.iter_lines():
        if line.strip():
            yield json.loads(line)


async def aiter_ndjson(resp: httpx.Response) -> AsyncIterator[Dict[str, Any]]:
    async for line in resp.aiter_lines():
        if line.strip():
            yield json.loads(line)


class AsyncTransport:
    """Sends requests with one httpx.AsyncClient (pooled connections)."""

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None,
                 http_client: Optional[httpx.AsyncClient] = None) -> None:
        self.url, self.api_key = resolve_config(url, api_key)
        self._own = http_client is None
        self.http = http_client or httpx.AsyncClient(timeout=default_timeout())

    async def close(self) -> None:
        if self._own:
            await self.http.aclose()

    async def send(self, req: Request) -> httpx.Response:
        try:
            resp = await self.http.request(req.method, self.url + req.path, **_kwargs(req, self.api_key, True))
        except httpx.TransportError as e:
            raise SbxConnectionError(f"{req.method} {req.path}: {e}") from e
        if not 200 <= resp.status_code < 300:
            raise error_from_response(resp.status_code, resp.content, resp.reason_phrase)
        return resp

    async def call(self, req: Request) -> Any:
        return decode(req, await self.send(req))

    @contextlib.asynccontextmanager
    async def stream(self, req: Request) -> AsyncIterator[httpx.Response]:
        try:
            cm = self.http.stream(req.method, self.url + req.path, **_kwargs(req, self.api_key, False))
            resp = await cm.__aenter__()
        except httpx.TransportError as e:
            raise SbxConnectionError(f"{req.method} {req.path}: {e}") from e
        try:
            if not 200 <= resp.status_code < 300:
                raise error_from_response(resp.status_code, await resp.aread(), resp.reason_phrase)
            yield resp
        finally:
            await cm.__aexit__(None, None, None)


def ws_url(url: str, path: str) -> str:
    if url.startswith("https://"):
        return "wss://" + url[len("https://"):] + path
    if url.startswith("http://"):
        return "ws://" + url[len("http://"):] + path
    return url + path
