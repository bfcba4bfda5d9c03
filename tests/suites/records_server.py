"""The scripted model of the ``records`` example suite (``records_script.RecordsScript``) behind an
OpenAI-compatible HTTP server on 127.0.0.1, for the entry points that build their own clients
from the config (``--llm openai --set llm.base_url=...``): the jobs' processes and Ray jobs reach
it over loopback as they would reach a real server.

Serves ``GET /v1/models``, ``POST /v1/chat/completions`` (the messages' texts go to the script;
a prompt it does not script, such as ``ratchet doctor``'s one-token probe, gets ``OK`` and is
counted in ``unscripted``) and ``POST /v1/embeddings`` (hashed bag-of-words vectors).

    with RecordsServer(dataset) as server:
        ... "--llm", "openai", "--set", f"llm.base_url={server.url}" ...
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from records_script import RecordsScript

MODEL = "records-script"
DIM = 32


@dataclass
class _Message:
    role: str
    content: str


def vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for word in re.findall(r"\w+", text.lower()):
        vec[int(hashlib.sha1(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


class RecordsServer:
    def __init__(self, dataset: Path):
        self.script = RecordsScript(dataset)
        self.lock = threading.Lock()
        self.completions = 0
        self.unscripted: list[str] = []
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def __enter__(self) -> "RecordsServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.http.shutdown()
        self.http.server_close()

    def answer(self, messages: list[dict[str, Any]]) -> str:
        chat = [_Message(m.get("role", "user"), str(m.get("content", ""))) for m in messages]
        try:
            return self.script(chat)
        except ValueError:  # not a loop prompt (a doctor's probe): any short answer will do
            with self.lock:
                self.unscripted.append("\n".join(m.content for m in chat)[:200])
            return "OK"

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

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [
                        {"id": MODEL, "object": "model", "created": 0, "owned_by": "test"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path.endswith("/embeddings"):
                    texts = request["input"]
                    texts = texts if isinstance(texts, list) else [texts]
                    self._json(200, {"object": "list", "model": MODEL, "data": [
                        {"object": "embedding", "index": i, "embedding": vector(t)}
                        for i, t in enumerate(texts)],
                        "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})
                    return
                text = server.answer(request["messages"])
                with server.lock:
                    server.completions += 1
                    number = server.completions
                words = sum(len(str(m.get("content", "")).split()) for m in request["messages"])
                self._json(200, {
                    "id": f"c{number}", "object": "chat.completion", "created": 0,
                    "model": MODEL, "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant",
                                                             "content": text}}],
                    "usage": {"prompt_tokens": words, "completion_tokens": len(text.split()),
                              "total_tokens": words + len(text.split())}})

        return Handler
