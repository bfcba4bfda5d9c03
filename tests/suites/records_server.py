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

import threading
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from openai_wire import OpenAIHandler
from records_script import RecordsScript

MODEL = "records-script"


@dataclass
class _Message:
    role: str
    content: str


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

        class Handler(OpenAIHandler):
            model = MODEL

            def do_POST(self):
                request = self.read_request()
                if self.path.endswith("/embeddings"):
                    self.send_embeddings(request)
                    return
                text = server.answer(request["messages"])
                with server.lock:
                    server.completions += 1
                    number = server.completions
                self.send_completion(number, request["messages"], text)

        return Handler
