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
import json
import os
import re
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, when run as a script
from openai_wire import OpenAIHandler  # noqa: E402

MODEL = "stub-model"


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

        class Handler(OpenAIHandler):
            model = MODEL

            def do_POST(self):
                request = self.read_request()
                if self.path.endswith("/embeddings"):
                    self.send_embeddings(request)
                    return
                with server.lock:
                    server.completions += 1
                    number = server.completions
                    if server.die_after and number > server.die_after:
                        os._exit(0)  # already dead: this call is cut off like the next ones
                if number == server.fail_once:
                    self.send_json(500, {"error": {"message": "stub: transient overload",
                                                   "type": "server_error"}})
                    return
                prompt = "\n".join(str(m.get("content", "")) for m in request["messages"])
                self.send_completion(number, request["messages"], _answer(prompt))
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
