"""The API's wire types (TypedDicts generated from the OpenAPI document),
e.g. ``sbx_sdk.types.Sandbox``, ``sbx_sdk.types.EntryInfo``, and the
operation table behind Client.call."""
from ._generated import *  # noqa: F401,F403
from ._generated import __all__  # noqa: F401
