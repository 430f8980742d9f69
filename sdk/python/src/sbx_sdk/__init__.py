"""sbx_sdk: the Python SDK of sbx, a self-hostable sandbox platform.

Sync::

    from sbx_sdk import Sandbox

    with Sandbox.create("base", timeout=1800, wait_ready=True) as sb:
        print(sb.commands.run("echo hello").stdout)

Async (the same names)::

    from sbx_sdk import AsyncSandbox

    async with await AsyncSandbox.create("base", wait_ready=True) as sb:
        print((await sb.commands.run("echo hello")).stdout)

Configuration comes from arguments (url=, api_key=) or SBX_URL and SBX_API_KEY.
"""
from ._async import (AsyncClient, AsyncCode, AsyncCommandHandle, AsyncCommands, AsyncFiles, AsyncPty,
                     AsyncPtyHandle, AsyncRuntimes, AsyncSandbox, AsyncSnapshots, AsyncVolumes, AsyncWatchHandle)
from ._core import DEFAULT_URL, __version__
from ._generated import OPERATIONS, Operation
from ._sync import (Client, Code, CommandHandle, Commands, Files, Pty, PtyHandle, Runtimes, Sandbox, Snapshots,
                    Volumes, WatchHandle)
from .errors import (ApiError, ConflictError, ForbiddenError, GatewayTimeoutError, IdempotencyKeyReusedError,
                     InsufficientCreditsError, InsufficientStorageError, InternalError, InvalidError,
                     KycRequiredError, MethodNotAllowedError, NotFoundError, NotSupportedError,
                     PlanLimitExceededError, ProviderError, SandboxStoppedError, SbxConnectionError, SbxError,
                     StreamEndedError, TooLargeError, UnauthorizedError, UnavailableError,
                     UnsupportedMediaTypeError, WarmPoolUnavailableError)
from .models import CommandResult, Execution, ExecutionError, Result

__all__ = [
    "__version__", "DEFAULT_URL", "OPERATIONS", "Operation",
    "Client", "Sandbox", "Commands", "CommandHandle", "Files", "WatchHandle", "Pty", "PtyHandle", "Code",
    "Snapshots", "Volumes", "Runtimes",
    "AsyncClient", "AsyncSandbox", "AsyncCommands", "AsyncCommandHandle", "AsyncFiles", "AsyncWatchHandle",
    "AsyncPty", "AsyncPtyHandle", "AsyncCode", "AsyncSnapshots", "AsyncVolumes", "AsyncRuntimes",
    "CommandResult", "Execution", "ExecutionError", "Result",
    "SbxError", "ApiError", "InvalidError", "TooLargeError", "UnsupportedMediaTypeError", "UnauthorizedError",
    "ForbiddenError", "KycRequiredError", "PlanLimitExceededError", "InsufficientCreditsError",
    "MethodNotAllowedError", "NotFoundError", "InsufficientStorageError", "IdempotencyKeyReusedError",
    "WarmPoolUnavailableError", "ConflictError", "NotSupportedError", "ProviderError", "UnavailableError",
    "GatewayTimeoutError", "InternalError", "SandboxStoppedError", "StreamEndedError", "SbxConnectionError",
]
