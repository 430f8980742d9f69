"""The exceptions of the SDK.

Every answer the server refuses raises a subclass of :class:`SbxError` chosen
by the ``type`` of the API's JSON error envelope (``{code, type, detail,
errors}``); each carries ``status``, ``type``, ``detail`` and ``errors`` (the
field errors, ``[{"field": ..., "message": ...}]``).
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Type

from ._generated import FieldError

__all__ = [
    "SbxError", "ApiError", "InvalidError", "TooLargeError", "UnsupportedMediaTypeError",
    "UnauthorizedError", "ForbiddenError", "KycRequiredError", "PlanLimitExceededError",
    "InsufficientCreditsError", "MethodNotAllowedError", "NotFoundError", "InsufficientStorageError",
    "IdempotencyKeyReusedError", "WarmPoolUnavailableError", "ConflictError", "NotSupportedError",
    "ProviderError", "UnavailableError", "GatewayTimeoutError", "InternalError",
    "SandboxStoppedError", "StreamEndedError", "SbxConnectionError", "error_from_response",
]


class SbxError(Exception):
    """The base of every error the SDK raises.

    status is the HTTP status (0 when no answer came), type the API's error
    type (e.g. ``not_found``), detail the server's explanation and errors the
    bad fields of the request, if any.
    """

    status: int
    type: str
    detail: str
    errors: List[FieldError]

    def __init__(self, detail: str, *, status: int = 0, type: str = "", errors: Optional[List[FieldError]] = None) -> None:
        super().__init__(detail)
        self.status = status
        self.type = type
        self.detail = detail
        self.errors = list(errors or [])

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(status={self.status}, type={self.type!r}, detail={self.detail!r})"


class ApiError(SbxError):
    """An answer of the API outside 2xx; its subclasses name each type."""


class InvalidError(ApiError):
    """400 invalid: bad input; ``errors`` names the fields."""


class TooLargeError(ApiError):
    """413 too_large: a request body over the route's bound."""


class UnsupportedMediaTypeError(ApiError):
    """415 unsupported_media_type."""


class UnauthorizedError(ApiError):
    """401 unauthorized: no or bad credentials."""


class ForbiddenError(ApiError):
    """403 forbidden: the credentials lack the right."""


class KycRequiredError(ForbiddenError):
    """403 kyc_required: the org or user must be verified first."""


class PlanLimitExceededError(ForbiddenError):
    """403 plan_limit_exceeded: the org's plan does not allow it."""


class InsufficientCreditsError(ApiError):
    """402 insufficient_credits: the org's balance is empty."""


class MethodNotAllowedError(ApiError):
    """405 method_not_allowed."""


class NotFoundError(ApiError):
    """404 not_found: no such thing visible to the caller."""


class InsufficientStorageError(ApiError):
    """507 insufficient_storage: no room on the host's (or the sandbox's) disk."""


class IdempotencyKeyReusedError(ApiError):
    """422 idempotency_key_reused: an Idempotency-Key sent again with another request."""


class ConflictError(ApiError):
    """409 conflict: the current state forbids it (e.g. resuming a running sandbox)."""


class NotSupportedError(ApiError):
    """501 not_supported: the provider cannot do it."""


class ProviderError(ApiError):
    """502 provider_error: the provider failed the operation."""


class UnavailableError(ApiError):
    """503 unavailable: a dependency is missing or down."""


class WarmPoolUnavailableError(UnavailableError):
    """503 warm_pool_unavailable: a create that requires its warm pool found no member ready."""


class GatewayTimeoutError(ApiError):
    """504 timeout: a bounded wait ran out."""


class InternalError(ApiError):
    """500 internal."""


class SandboxStoppedError(SbxError):
    """Ends a stream (a command's output, a terminal, a watch, code) whose
    sandbox stopped running first; ``detail`` is the server's reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, type="sandbox_stopped")
        self.reason = reason


class StreamEndedError(SbxError):
    """A stream ended before what it followed did (the connection broke)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, type="stream_ended")


class SbxConnectionError(SbxError):
    """No answer came: the connection to the server failed."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, type="connection")


_BY_TYPE: Dict[str, Type[ApiError]] = {
    "invalid": InvalidError,
    "too_large": TooLargeError,
    "unsupported_media_type": UnsupportedMediaTypeError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "kyc_required": KycRequiredError,
    "plan_limit_exceeded": PlanLimitExceededError,
    "insufficient_credits": InsufficientCreditsError,
    "method_not_allowed": MethodNotAllowedError,
    "not_found": NotFoundError,
    "insufficient_storage": InsufficientStorageError,
    "idempotency_key_reused": IdempotencyKeyReusedError,
    "warm_pool_unavailable": WarmPoolUnavailableError,
    "conflict": ConflictError,
    "not_supported": NotSupportedError,
    "provider_error": ProviderError,
    "unavailable": UnavailableError,
    "timeout": GatewayTimeoutError,
    "internal": InternalError,
}

_BY_STATUS: Dict[int, str] = {
    400: "invalid", 401: "unauthorized", 402: "insufficient_credits", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 409: "conflict", 413: "too_large", 415: "unsupported_media_type",
    422: "idempotency_key_reused", 500: "internal", 501: "not_supported", 502: "provider_error",
    503: "unavailable", 504: "timeout", 507: "insufficient_storage",
}


def error_from_response(status: int, body: bytes, reason: str = "") -> ApiError:
    """The exception for a refused answer: the server's envelope when the
    body is one, else one made from the status and the body's text."""
    env: Any = None
    try:
        env = json.loads(body.decode("utf-8")) if body else None
    except (ValueError, UnicodeDecodeError):
        env = None
    if isinstance(env, dict) and env.get("detail"):
        etype = str(env.get("type") or _BY_STATUS.get(status, f"http_{status}"))
        cls = _BY_TYPE.get(etype) or _BY_TYPE.get(_BY_STATUS.get(status, ""), ApiError)
        return cls(str(env["detail"]), status=int(env.get("code") or status), type=etype, errors=env.get("errors") or [])
    etype = _BY_STATUS.get(status, f"http_{status}")
    text = body.decode("utf-8", "replace").strip()
    detail = f"{status} {reason}".strip() + (f": {text}" if text else "")
    return _BY_TYPE.get(etype, ApiError)(detail, status=status, type=etype)
