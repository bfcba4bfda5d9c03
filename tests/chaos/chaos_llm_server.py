"""An OpenAI-compatible chat server on 127.0.0.1 that answers with a scripted responder and
misbehaves on purpose: a throttling storm (HTTP 429 / 503) and garbled structured replies.

- Every distinct request (hash of its body) fails with 429 or 503 at most ``fails_per_request``
  times, each with probability ``storm_p`` while the storm lasts (the first ``storm_requests``
  requests): a client that retries (the ``openai`` client does, honouring ``retry-after-ms``)
  always gets through, so a run must end exactly as without the storm.
- A structured request (one with ``response_format``) is answered with garbage, once per
  distinct prompt, with probability ``garble_p``; the caller's repair attempt (its prompt quotes
  the garbage) gets the real answer: the clients promise one repair, not two.
- ``stats`` counts requests, 429s, 503s and garbled replies.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from ratchet_ray.llm.base import Message

GARBAGE = "}}{{ <garbled by the chaos server> [[["


class ChaosLLMServer:
    def __init__(self, responder: Callable[..., str], *, seed: int, storm_p: float = 0.5,
                 storm_requests: int = 10**9, fails_per_request: int = 2, garble_p: float = 0.0):
        self.responder = responder
        self.rng = random.Random(seed)
        self.storm_p, self.storm_requests = storm_p, storm_requests
        self.fails_per_request, self.garble_p = fails_per_request, garble_p
        self.stats = {"requests": 0, "429": 0, "503": 0, "garbled": 0}
        self._fails: dict[str, int] = {}
        self._garbled: set[str] = set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ChaosLLMServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def outage(self, seconds: float) -> None:
        """The server dies (its listening socket closes: new requests are refused) and comes
        back on the same port after ``seconds``."""
        port = self._server.server_address[1]
        self.__exit__()
        time.sleep(seconds)
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def decide(self, body: bytes, structured: bool) -> str:
        """"429", "503", "garble" or "ok" for one request (seeded, thread-safe)."""
        key = hashlib.sha256(body).hexdigest()
        with self._lock:
            self.stats["requests"] += 1
            in_storm = self.stats["requests"] <= self.storm_requests
            if (in_storm and self._fails.get(key, 0) < self.fails_per_request
                    and self.rng.random() < self.storm_p):
                self._fails[key] = self._fails.get(key, 0) + 1
                code = self.rng.choice(["429", "503"])
                self.stats[code] += 1
                return code
            prompt_key = hashlib.sha256(json.dumps(json.loads(body)["messages"]).encode()).hexdigest()
            repair = GARBAGE.encode() in body  # the caller's one repair attempt gets through
            if (structured and not repair and prompt_key not in self._garbled
                    and self.rng.random() < self.garble_p):
                self._garbled.add(prompt_key)
                self.stats["garbled"] += 1
                return "garble"
            return "ok"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return

            def _send(self, code: int, payload: dict, headers: dict[str, str] | None = None):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": "scripted", "object": "model", "owned_by": "chaos"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = json.loads(body)
                structured = "response_format" in request
                verdict = server.decide(body, structured)
                if verdict in ("429", "503"):
                    kind = "rate_limit_exceeded" if verdict == "429" else "server_overloaded"
                    self._send(int(verdict), {"error": {"message": f"chaos: {kind}",
                                                        "type": kind, "code": kind}},
                               {"retry-after-ms": "20"})
                    return
                messages = [Message(role=m["role"], content=m["content"])
                            for m in request["messages"]]
                schema = (request.get("response_format") or {}).get("json_schema", {}).get("schema")
                try:
                    text = GARBAGE if verdict == "garble" else server.responder(messages, schema)
                except Exception as exc:  # the scripted responder refuses an unscripted prompt
                    self._send(500, {"error": {"message": f"responder: {exc}"}})
                    return
                words_in = sum(len(m.content.split()) for m in messages)
                self._send(200, {
                    "id": f"chaos-{time.monotonic_ns()}", "object": "chat.completion",
                    "created": int(time.time()), "model": "scripted",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": words_in, "completion_tokens": len(text.split()),
                              "total_tokens": words_in + len(text.split())}})

        return Handler
