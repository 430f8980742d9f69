#!/usr/bin/env python3
"""Generate src/sbx_sdk/_generated.py from sbx's OpenAPI document.

Standard library only. Usage, from sdk/python:

    python3 scripts/generate.py            # writes src/sbx_sdk/_generated.py
    python3 scripts/generate.py --check    # exits 1 when the file is stale

Every schema of components.schemas becomes a TypedDict with the exact JSON
field names (total=False for the fields the schema does not require; enums
as Literal), and every operation an entry of OPERATIONS (method, path, path,
query and header parameters, body schema and media type, answer schema and
media type), which Client.call and AsyncClient.call send.
"""
from __future__ import annotations

import argparse
import json
import keyword
import os
import sys
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
DOCUMENT = os.path.normpath(os.path.join(HERE, "..", "..", "..", "httpapi", "openapi.json"))
OUTPUT = os.path.normpath(os.path.join(HERE, "..", "src", "sbx_sdk", "_generated.py"))

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def _ref_name(ref: str) -> str:
    prefix = "#/components/schemas/"
    if not ref.startswith(prefix):
        raise ValueError(f"unsupported $ref {ref!r}")
    return ref[len(prefix):]


def py_type(schema: Dict[str, Any]) -> str:
    """The Python annotation (as source text) of a JSON schema."""
    if not schema:
        return "Any"
    if "$ref" in schema:
        return _ref_name(schema["$ref"])
    if "enum" in schema:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    t = schema.get("type")
    if t == "string":
        return "bytes" if schema.get("format") == "binary" else "str"
    if t == "integer":
        return "int"
    if t == "number":
        return "float"
    if t == "boolean":
        return "bool"
    if t == "array":
        return f"List[{py_type(schema.get('items', {}))}]"
    if t == "object":
        extra = schema.get("additionalProperties")
        if schema.get("properties"):
            raise ValueError("inline object schemas with properties are not supported")
        if isinstance(extra, dict):
            return f"Dict[str, {py_type(extra)}]"
        return "Dict[str, Any]"
    return "Any"


def _doc(text: str, indent: str) -> List[str]:
    text = " ".join(text.split())
    if not text:
        return []
    return [f"{indent}# {line}" for line in _wrap(text, 76 - len(indent))]


def _wrap(text: str, width: int) -> List[str]:
    lines: List[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def _is_name(field: str) -> bool:
    return field.isidentifier() and not keyword.iskeyword(field)


def render_schema(name: str, schema: Dict[str, Any]) -> List[str]:
    props: Dict[str, Any] = schema.get("properties") or {}
    if schema.get("type") != "object" or not props:
        return [f"{name} = {py_type(schema)}", ""]
    required = [f for f in props if f in set(schema.get("required", []))]
    optional = [f for f in props if f not in required]
    out: List[str] = []
    desc = schema.get("description", "")

    def body(fields: List[str], indent: str) -> List[str]:
        lines: List[str] = []
        for f in fields:
            lines += _doc(props[f].get("description", ""), indent)
            lines.append(f"{indent}{f}: {py_type(props[f])}")
        return lines

    def functional(tname: str, fields: List[str], total: bool) -> List[str]:
        lines = [f"{tname} = TypedDict("]
        lines.append(f"    {tname!r},")
        lines.append("    {")
        for f in fields:
            lines.append(f"        {f!r}: {py_type(props[f])!r},")
        lines.append("    },")
        if not total:
            lines.append("    total=False,")
        lines.append(")")
        return lines

    base = "TypedDict"
    if required:
        rname = name if not optional else f"_{name}Required"
        if all(_is_name(f) for f in required):
            out.append(f"class {rname}(TypedDict):")
            out += _doc(desc, "    ") if not optional else []
            out += body(required, "    ")
        else:
            out += _doc(desc, "") if not optional else []
            out += functional(rname, required, True)
        out += ["", ""]
        base = rname
    if optional:
        bad = [f for f in optional if not _is_name(f)]
        if bad and required:
            raise ValueError(f"{name}: optional fields {bad} are not identifiers")
        if bad:
            out += _doc(desc, "")
            out += functional(name, optional, False)
        else:
            out.append(f"class {name}({base}, total=False):")
            out += _doc(desc, "    ")
            out += body(optional, "    ")
        out += ["", ""]
    return out


def _schema_of(content: Dict[str, Any]) -> Tuple[Any, Any]:
    """The media type and schema name (or None) of a content map."""
    if not content:
        return None, None
    media = sorted(content)[0]
    schema = content[media].get("schema") or {}
    name = _ref_name(schema["$ref"]) if "$ref" in schema else None
    return media, name


def operations(doc: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    ops: List[Tuple[str, Dict[str, Any]]] = []
    for path, item in doc["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            params = shared + op.get("parameters", [])
            body_media, body_schema = _schema_of((op.get("requestBody") or {}).get("content", {}))
            answer = None
            for code in sorted(op.get("responses", {})):
                if code.startswith("2") or code == "101":
                    answer = (code, op["responses"][code])
                    break
            resp_media, resp_schema = _schema_of((answer[1] if answer else {}).get("content", {}))
            ops.append((op["operationId"], {
                "method": method.upper(),
                "path": path,
                "path_params": tuple(p["name"] for p in params if p["in"] == "path"),
                "query_params": tuple(p["name"] for p in params if p["in"] == "query"),
                "header_params": tuple(p["name"] for p in params if p["in"] == "header"),
                "body_media": body_media,
                "body_schema": body_schema,
                "body_required": bool((op.get("requestBody") or {}).get("required")),
                "status": int(answer[0]) if answer else 200,
                "response_media": resp_media,
                "response_schema": resp_schema,
                "summary": " ".join((op.get("summary") or "").split()),
            }))
    ops.sort(key=lambda o: o[0])
    return ops


def render(doc: Dict[str, Any]) -> str:
    """The source of _generated.py for an OpenAPI document."""
    out = [
        "# Code generated by scripts/generate.py from httpapi/openapi.json; DO NOT EDIT.",
        f"# OpenAPI {doc.get('openapi', '')}: {doc.get('info', {}).get('title', '')} {doc.get('info', {}).get('version', '')}".rstrip(),
        '"""The wire types and operations of sbx\'s REST API, generated from its OpenAPI document."""',
        "from __future__ import annotations",
        "",
        "from typing import Any, Dict, List, Literal, NamedTuple, Optional, Tuple, TypedDict",
        "",
        "__all__ = [",
    ]
    schemas = doc["components"]["schemas"]
    for name in sorted(schemas):
        out.append(f"    {name!r},")
    out += ["    'Operation',", "    'OPERATIONS',", "    'OperationId',", "]", "", ""]
    for name in sorted(schemas):
        out += render_schema(name, schemas[name])
    out += [
        "class Operation(NamedTuple):",
        "    \"\"\"One operation of the API, as the document describes it.\"\"\"",
        "",
        "    method: str",
        "    path: str  # with {name} for each path parameter",
        "    path_params: Tuple[str, ...]",
        "    query_params: Tuple[str, ...]",
        "    header_params: Tuple[str, ...]",
        "    body_media: Optional[str]  # the request body's media type, if it takes one",
        "    body_schema: Optional[str]  # the name of its schema in components.schemas",
        "    body_required: bool",
        "    status: int  # the status of success",
        "    response_media: Optional[str]  # the answer's media type; None: no body",
        "    response_schema: Optional[str]",
        "    summary: str",
        "",
        "",
    ]
    ops = operations(doc)
    out.append("OperationId = Literal[")
    for op_id, _ in ops:
        out.append(f"    {op_id!r},")
    out += ["]", "", ""]
    out.append("OPERATIONS: Dict[str, Operation] = {")
    for op_id, o in ops:
        out.append(f"    {op_id!r}: Operation(")
        for field in ("method", "path", "path_params", "query_params", "header_params", "body_media",
                      "body_schema", "body_required", "status", "response_media", "response_schema", "summary"):
            out.append(f"        {field}={o[field]!r},")
        out.append("    ),")
    out += ["}", ""]
    return "\n".join(out)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--document", default=DOCUMENT)
    ap.add_argument("--output", default=OUTPUT)
    ap.add_argument("--check", action="store_true", help="exit 1 when the output is not up to date")
    args = ap.parse_args(argv)
    with open(args.document, encoding="utf-8") as f:
        text = render(json.load(f))
    if args.check:
        try:
            with open(args.output, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current != text:
            print(f"{args.output} is stale: run scripts/generate.py", file=sys.stderr)
            return 1
        return 0
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
