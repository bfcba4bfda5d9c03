"""The OpenAI wire format the loopback test servers speak (``tests/loop/model_server.py``,
``tests/suites/records_server.py``): ``GET /v1/models`` and the JSON bodies of chat completions
and embeddings, with hashed bag-of-words vectors for the embeddings.

A server's handler subclasses ``OpenAIHandler``, sets ``model`` and writes ``do_POST`` with
``read_request`` / ``send_completion`` / ``send_embeddings``.
"""

from __future__ import annotations

import hashlib
import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

DIM = 32


def hash_vector(text: str, dim: int = DIM) -> list[float]:
    """A unit bag-of-words vector: each word hashed into one of ``dim`` buckets."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vec[int(hashlib.sha1(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


class OpenAIHandler(BaseHTTPRequestHandler):
    model = "stub-model"

    def log_message(self, *args: Any) -> None:
        return

    def send_json(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": self.model, "object": "model", "created": 0, "owned_by": "test"}]})
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def read_request(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))

    def send_embeddings(self, request: dict[str, Any]) -> None:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        self.send_json(200, {"object": "list", "model": self.model, "data": [
            {"object": "embedding", "index": i, "embedding": hash_vector(t)}
            for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})

    def send_completion(self, number: int, messages: list[dict[str, Any]], text: str) -> None:
        words = sum(len(str(m.get("content", "")).split()) for m in messages)
        self.send_json(200, {
            "id": f"c{number}", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": words, "completion_tokens": len(text.split()),
                      "total_tokens": words + len(text.split())}})
