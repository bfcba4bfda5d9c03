"""A tiny OpenAI-compatible server on 127.0.0.1 that answers every request after a fixed delay.

Used by ``bench/round_scaling.py`` (through the ``openai`` backend) to measure how a round scales
with the number of Solver actors when the LLM, not the loop, is the bottleneck. Each request is
served on its own thread, so N concurrent requests take ~delay, not N x delay.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/completions``, ``POST /v1/embeddings``,
``GET /v1/models``. A request with ``response_format.json_schema`` gets the smallest JSON
instance of that schema (first enum value, "NONE"-like strings, empty lists); any other request
gets a short Python function in a code block.

    python bench/delay_server.py --delay 0.5 --port 8011
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

CODE_REPLY = "```python\ndef solution(*args):\n    return None\n```"


def schema_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """The smallest value that validates against a (pydantic-style) JSON schema."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return schema_instance(defs[schema["$ref"].split("/")[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return schema_instance(schema[key][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: schema_instance(props[name], defs) for name in schema.get("required", props)}
    if kind == "array":
        return [schema_instance(schema["items"], defs)] * schema.get("minItems", 0)
    if kind in ("number", "integer"):
        low = schema.get("minimum", 0)
        return low if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    return "NONE" + "x" * max(0, schema.get("minLength", 0) - 4)


def _embedding(text: str, dim: int = 64) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    vec = [((digest[i % len(digest)] / 255.0) - 0.5) for i in range(dim)]
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


class _Handler(BaseHTTPRequestHandler):
    delay_s = 0.5
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK (~40 ms a request here), which real servers (uvicorn) do not add.
    disable_nagle_algorithm = True

    def log_message(self, fmt: str, *args: Any) -> None:  # keep the bench output clean
        return

    def _send(self, payload: dict[str, Any], status: int = 200) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send({"object": "list", "data": [{"id": "delay", "object": "model"}]})
        else:
            self._send({"error": {"message": f"unknown path {self.path}"}}, 404)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        time.sleep(self.delay_s)
        now, model = int(time.time()), request.get("model", "delay")
        if self.path.endswith("/embeddings"):
            texts = request.get("input", [])
            texts = [texts] if isinstance(texts, str) else texts
            data = [{"object": "embedding", "index": i, "embedding": _embedding(t)}
                    for i, t in enumerate(texts)]
            self._send({"object": "list", "data": data, "model": model,
                        "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})
            return
        fmt = request.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        text = json.dumps(schema_instance(schema)) if schema else CODE_REPLY
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        if self.path.endswith("/chat/completions"):
            choice = {"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": text}}
            self._send({"id": f"chatcmpl-{now}", "object": "chat.completion", "created": now,
                        "model": model, "choices": [choice], "usage": usage})
        elif self.path.endswith("/completions"):
            choice = {"index": 0, "finish_reason": "stop", "text": text, "logprobs": None}
            self._send({"id": f"cmpl-{now}", "object": "text_completion", "created": now,
                        "model": model, "choices": [choice], "usage": usage})
        else:
            self._send({"error": {"message": f"unknown path {self.path}"}}, 404)


def serve(delay_s: float, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start the server on 127.0.0.1 in a daemon thread; returns it and its ``/v1`` base URL."""
    handler = type("DelayHandler", (_Handler,), {"delay_s": delay_s})
    ThreadingHTTPServer.request_queue_size = 128  # bursts of concurrent solvers
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@contextlib.contextmanager
def serve_in_process(delay_s: float) -> Iterator[str]:
    """This server in a process of its own (as a real LLM service is, so the caller's GIL does
    not delay its answers); yields its ``/v1`` base URL and stops it on exit."""
    process = subprocess.Popen([sys.executable, __file__, "--delay", str(delay_s), "--port", "0"],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("serving "):
            raise RuntimeError(f"delay server did not start (exit {process.poll()}): {line!r}")
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--port", type=int, default=8011, help="0: any free port")
    args = parser.parse_args()
    srv, url = serve(args.delay, args.port)
    print(f"serving {url} with {args.delay}s delay; Ctrl-C stops", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        srv.shutdown()
