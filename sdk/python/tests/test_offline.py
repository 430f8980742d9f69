"""Tests that need no server: the generated module is up to date with the
OpenAPI document, the ergonomic layer only names operations the document
has, and errors map to their classes."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import typing
import unittest

import sbx_sdk
from sbx_sdk import _generated as g
from sbx_sdk._core import build
from sbx_sdk.errors import error_from_response

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENT = os.path.join(ROOT, "..", "..", "httpapi", "openapi.json")


def _generator():
    spec = importlib.util.spec_from_file_location("sbx_generate", os.path.join(ROOT, "scripts", "generate.py"))
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


class GeneratedTest(unittest.TestCase):
    def setUp(self) -> None:
        with open(DOCUMENT, encoding="utf-8") as f:
            self.doc = json.load(f)

    def test_up_to_date(self) -> None:
        """_generated.py is what the generator makes of the document now: an
        operation or field the SDK does not know fails here."""
        want = _generator().render(self.doc)
        with open(os.path.join(ROOT, "src", "sbx_sdk", "_generated.py"), encoding="utf-8") as f:
            have = f.read()
        self.assertTrue(want == have, "src/sbx_sdk/_generated.py lags httpapi/openapi.json: run "
                        "/usr/bin/python3 sdk/python/scripts/generate.py")

    def test_every_operation_and_schema(self) -> None:
        ids = {op["operationId"] for item in self.doc["paths"].values() for m, op in item.items()
               if m in ("get", "put", "post", "delete", "patch")}
        self.assertEqual(ids, set(g.OPERATIONS))
        for name, schema in self.doc["components"]["schemas"].items():
            td = getattr(g, name)
            if schema.get("properties"):
                hints = typing.get_type_hints(td)
                self.assertEqual(set(hints), set(schema["properties"]), name)
                self.assertEqual(set(td.__required_keys__), set(schema.get("required", [])), name)

    def test_enums_are_literals(self) -> None:
        hints = typing.get_type_hints(g.Sandbox)
        self.assertEqual(typing.get_args(hints["state"]), ("starting", "running", "paused", "killed", "failed"))

    def test_ergonomic_layer_names_known_operations(self) -> None:
        src = os.path.join(ROOT, "src", "sbx_sdk")
        used = set()
        for name in ("_sync.py", "_async.py"):
            with open(os.path.join(src, name), encoding="utf-8") as f:
                used |= set(re.findall(r'(?:_call|build)\(\s*"([A-Za-z]+)"', f.read()))
        self.assertTrue(used)
        self.assertEqual(used - set(g.OPERATIONS), set())

    def test_build(self) -> None:
        r = build("listSandboxes", query={"state": ["running", "paused"], "limit": 5, "cursor": None})
        self.assertEqual((r.method, r.path, r.query), ("GET", "/api/v1/sandboxes",
                                                       [("state", "running"), ("state", "paused"), ("limit", "5")]))
        r = build("getCommand", {"id": "a/b", "ref": 7})
        self.assertEqual(r.path, "/api/v1/sandboxes/a%2Fb/commands/7")
        required = [k for k, op in g.OPERATIONS.items() if op.body_required and op.body_media == "application/json"
                    and not op.path_params]
        self.assertEqual(build(required[0]).json, {})
        with self.assertRaises(ValueError):
            build("listSandboxes", query={"nope": 1})
        with self.assertRaises(ValueError):
            build("noSuchOperation")


class ErrorsTest(unittest.TestCase):
    def test_classes(self) -> None:
        cases = {
            (404, "not_found"): sbx_sdk.NotFoundError, (409, "conflict"): sbx_sdk.ConflictError,
            (402, "insufficient_credits"): sbx_sdk.InsufficientCreditsError,
            (403, "kyc_required"): sbx_sdk.KycRequiredError, (403, "plan_limit_exceeded"): sbx_sdk.PlanLimitExceededError,
            (403, "forbidden"): sbx_sdk.ForbiddenError, (400, "invalid"): sbx_sdk.InvalidError,
            (503, "warm_pool_unavailable"): sbx_sdk.WarmPoolUnavailableError, (504, "timeout"): sbx_sdk.GatewayTimeoutError,
        }
        for (status, etype), cls in cases.items():
            body = json.dumps({"code": status, "type": etype, "detail": "why", "errors": [{"field": "f", "message": "m"}]})
            e = error_from_response(status, body.encode())
            self.assertIs(type(e), cls)
            self.assertIsInstance(e, sbx_sdk.SbxError)
            self.assertEqual((e.status, e.type, e.detail, e.errors), (status, etype, "why", [{"field": "f", "message": "m"}]))
        self.assertTrue(issubclass(sbx_sdk.KycRequiredError, sbx_sdk.ForbiddenError))
        e = error_from_response(502, b"bad gateway", "Bad Gateway")
        self.assertIs(type(e), sbx_sdk.ProviderError)
        self.assertIn("bad gateway", e.detail)

    def test_config_from_env(self) -> None:
        old = dict(os.environ)
        try:
            os.environ["SBX_URL"], os.environ["SBX_API_KEY"] = "http://example.invalid:1/", "k"
            c = sbx_sdk.Client()
            self.assertEqual((c.url, c.api_key), ("http://example.invalid:1", "k"))
            c.close()
            c = sbx_sdk.Client("http://other:2", api_key="j")
            self.assertEqual((c.url, c.api_key), ("http://other:2", "j"))
            c.close()
        finally:
            os.environ.clear()
            os.environ.update(old)

    def test_create_retries_once_with_the_same_key(self) -> None:
        import httpx
        keys = []

        def handler(request: httpx.Request) -> httpx.Response:
            keys.append(request.headers["Idempotency-Key"])
            if len(keys) == 1:
                raise httpx.ConnectError("refused", request=request)
            return httpx.Response(200, json={"id": "u", "sandboxID": "s", "state": "running"})
        c = sbx_sdk.Client("http://sbx.invalid", "k", http_client=httpx.Client(transport=httpx.MockTransport(handler)))
        sb = sbx_sdk.Sandbox.create("base", client=c)
        self.assertEqual((sb.sandbox_id, len(keys), keys[0] == keys[1]), ("s", 2, True))


if __name__ == "__main__":
    unittest.main()
