"""A small OpenAI-compatible model server on 127.0.0.1 for the fail-loudly tests.

    python tests/loop/model_server.py PORT [--die-after N] [--fail-once K]

Serves ``/v1/models``, ``/v1/chat/completions`` and ``/v1/embeddings`` over plain HTTP/1.0 (one
request per connection, so a dead server refuses the very next call). Code prompts get a
function that fails its tests (an ordinary wrong answer, never an infrastructure failure),
failure reviews get a valid verdict, embeddings are hashed bag-of-words vectors.
``--die-after N``: the process exits (``os._exit``) right after answering its N-th completion,
as a crashed server would. ``--fail-once K``: the K-th completion gets an HTTP 500 (a
transient outage of one call).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "stub-model"
DIM = 32


def _vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for word in re.findall(r"\w+", text.lower()):
        vec[int(hashlib.sha1(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


def _answer(prompt: str) -> str:
    if "# Failure review" in prompt:
        return json.dumps({"rationale": "stub", "pattern": "returns nothing useful",
                           "confidence": "high", "attribution": "inapplicable"})
    match = re.search(r"The function must be named `([^`]+)`", prompt)
    name = match.group(1) if match else "solution"
    return f"```python\ndef {name}(*args, **kwargs):\n    return None\n```"


class Server:
    def __init__(self, port: int, die_after: int = 0, fail_once: int = 0):
        self.die_after, self.fail_once = die_after, fail_once
        self.completions = 0
        self.lock = threading.Lock()
        self.http = ThreadingHTTPServer(("127.0.0.1", port), self._handler())

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def _json(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [
                        {"id": MODEL, "object": "model", "created": 0, "owned_by": "test"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path.endswith("/embeddings"):
                    texts = request["input"] if isinstance(request["input"], list) else [
                        request["input"]]
                    self._json(200, {"object": "list", "model": MODEL, "data": [
                        {"object": "embedding", "index": i, "embedding": _vector(t)}
                        for i, t in enumerate(texts)],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                    return
                with server.lock:
                    server.completions += 1
                    number = server.completions
                    if server.die_after and number > server.die_after:
                        os._exit(0)  # already dead: this call is cut off like the next ones
                if number == server.fail_once:
                    self._json(500, {"error": {"message": "stub: transient overload",
                                               "type": "server_error"}})
                    return
                prompt = "\n".join(str(m.get("content", "")) for m in request["messages"])
                text = _answer(prompt)
                self._json(200, {
                    "id": f"c{number}", "object": "chat.completion", "created": 0,
                    "model": MODEL, "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant",
                                                             "content": text}}],
                    "usage": {"prompt_tokens": len(prompt.split()),
                              "completion_tokens": len(text.split()),
                              "total_tokens": len(prompt.split()) + len(text.split())}})
                if server.die_after and number >= server.die_after:
                    os._exit(0)  # dies like a crashed server: the next call is refused

        return Handler


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_model_server(port: int, *flags: str):
    """This server as a process of its own (so it can die like one); returns once it listens."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, __file__, str(port), *flags],
                            stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError(f"model server on port {port} did not start (exit {proc.wait()})")
    return proc


def stop(proc) -> None:
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=10)
    proc.stdout.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--die-after", type=int, default=0)
    parser.add_argument("--fail-once", type=int, default=0)
    args = parser.parse_args()
    server = Server(args.port, args.die_after, args.fail_once)
    print("ready", flush=True)
    server.http.serve_forever()


if __name__ == "__main__":
    main()
