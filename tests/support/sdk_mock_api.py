"""A stand-in for the mock API server the SDKs' ``tests/api_resources`` expect (the SDK makers use Prism).

Each SDK's ``api.md`` lists every method with its HTTP method, path and response type
(``<code title="post /chat/completions">client.chat.completions.create(...) -> ChatCompletion</code>``). This
server answers a request with the smallest JSON value of that type that the SDK's own pydantic model accepts
(required fields only, first enum value or union member, empty lists), checked against the type itself before
it is sent; a streamed request (``"stream": true``) gets an empty event stream. That is all the api_resources
tests read: they check the request is built and the answer parses into the documented type, with the SDK's
strict response validation on.

Runs on loopback in a thread of the calling process (:func:`serve`); the suite finds it through
``TEST_API_BASE_URL``, as it finds Prism.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

_METHOD = re.compile(r'<code title="(\w+) ([^"]+)">client\.[\w.]+\.<a [^>]*>\w+</a>\(.*?\) -> (.*?)</code>')
_LINK = re.compile(r'<a href="\./src/([\w/]+)\.py">([^<]+)</a>')


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    query: str  # a query the request must carry (``beta=true`` tells a beta twin's path), or ""
    answer: Any  # the JSON value, or bytes for a binary answer
    content_type: str

    def matches(self, method: str, path: str, query: str) -> bool:
        return (method == self.method and bool(self.pattern.match(path))
                and (not self.query or self.query in query.split("&")))


def routes(root: Path, package: str) -> list[Route]:
    """Every method of the SDK's ``api.md`` files as a route with its synthesized answer (the most specific
    first: fixed paths before parameters, a required query before none)."""
    found: list[Route] = []
    seen: set[tuple[str, str]] = set()
    for document in sorted(root.rglob("api.md")):
        for method, template, returned in _METHOD.findall(document.read_text(encoding="utf-8")):
            if (method, template) in seen:
                continue
            seen.add((method, template))
            path, _, query = template.partition("?")
            answer, content_type = _answer(returned, package)
            pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "/?$")
            found.append(Route(method.upper(), pattern, query, answer, content_type))
    return sorted(found, key=lambda route: (route.pattern.pattern.count("[^/]+"), not route.query))


def _answer(returned: str, package: str) -> tuple[Any, str]:
    link = _LINK.search(returned)
    text = link.group(2) if link else returned.strip()
    if "Binary" in text:  # HttpxBinaryResponseContent, BinaryAPIResponse
        return b"binary", "application/octet-stream"
    if text == "str":
        return "string", "application/json"
    if link is None or text in ("None", "object"):
        return {}, "application/json"
    module = importlib.import_module(link.group(1).replace("/", "."))
    page = re.fullmatch(r"(\w+)\[(\w+)\]", text)
    if page:
        pagination = importlib.import_module(f"{package}.pagination")
        wrapper = getattr(pagination, page.group(1), None)
        if wrapper is None:  # not a page: a stream of JSON lines (a JSONLDecoder) of the item type
            item, _ = _answer(returned.replace(text, page.group(2)), package)
            return json.dumps(item).encode() + b"\n", "application/x-jsonl"
        kind = wrapper[getattr(module, page.group(2))]
    else:
        kind = getattr(module, text)
    adapter = TypeAdapter(kind)
    schema = adapter.json_schema()
    value = example(schema, schema.get("$defs", {}))
    adapter.validate_python(value, strict=False)  # an answer the SDK cannot read would test nothing
    return value, "application/json"


def example(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """A small JSON value of a JSON Schema (as pydantic writes them): required fields only, the first enum value
    or union member, one item per list (as an example in an API spec has; an empty list is not always an answer
    the SDK accepts) until ``depth`` grows deep, where recursive types stop."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        return example(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, depth)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = schema[key]
            plain = [option for option in options if option.get("type") != "null"]
            if len(plain) < len(options) and key != "allOf":
                return None
            return example(plain[0] if plain else options[0], defs, depth)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: example(properties[name], defs, depth + 1) for name in schema.get("required", [])}
    if kind == "array":
        count = max(schema.get("minItems", 0), 1 if depth < 6 else 0)
        return [example(schema.get("items", {}), defs, depth + 1) for _ in range(count)]
    if kind == "string":
        return {"date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01"}.get(schema.get("format", ""), "string")
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return {}


def _handler(table: list[Route]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            route = next((r for r in table if r.matches(self.command, path, query)), None)
            if route is None:
                self._send(404, b'{"error": {"message": "no such route", "type": "not_found"}}', "application/json")
                return
            streamed = "stream=true" in query.split("&")
            if body[:1] == b"{":
                with contextlib.suppress(ValueError):
                    streamed = streamed or json.loads(body).get("stream") is True
            if streamed:
                self._send(200, b"", "text/event-stream")
            elif isinstance(route.answer, bytes):
                self._send(200, route.answer, route.content_type)
            else:
                self._send(200, json.dumps(route.answer).encode(), route.content_type)

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _answer

    return Handler


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that hangs up (the SDK tests close streams unread) is no error of the server's


@contextlib.contextmanager
def serve(root: Path, package: str) -> Iterator[str]:
    """Serve the SDK's API on a free loopback port; yields the base URL."""
    server = _Server(("127.0.0.1", 0), _handler(routes(root, package)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
