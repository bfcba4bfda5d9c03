"""Real loopback servers for the backend tests.

- ``start_katan``: the ``llm-katan`` server (echo backend) speaking the Bedrock runtime and OpenAI
  protocols on 127.0.0.1.
- ``WireProxy``: a tiny HTTP proxy on 127.0.0.1 placed between the real boto3 client and
  llm-katan. It plays the network: scripted error replies (a 429 ThrottlingException once, a 404
  for an unavailable model) and Cohere embed-v4 ``invoke_model`` replies (llm-katan has no
  embedding models), forwarding everything else byte for byte.
- ``start_llama_server``: llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``,
  its models loaded with extra buffer types off, as ``ratchet_ray.llm.local`` loads Gemma).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 180.0, log: Path | None = None) -> None:
    """Wait until ``url`` answers 2xx. The bound is generous: a server that starts in 4 s on an
    idle machine has taken over 60 s on a loaded 2-core CI machine. A failure names the last
    error and ends with the server's log tail, so the reason is in the report."""
    deadline = time.monotonic() + timeout
    last_error: OSError | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before {url} answered"
                               f"{_log_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError as exc:
            last_error = exc
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout}s (last error: {last_error!r})"
                       f"{_log_tail(log)}")


def _log_tail(log: Path | None, lines: int = 30) -> str:
    if log is None or not log.exists():
        return ""
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- {log} (last {len(tail)} lines) ---\n" + "\n".join(tail)


def start_katan(tmp_dir: Path, model: str = "echo-model") -> tuple[subprocess.Popen, str]:
    script = Path(sys.executable).parent / "llm-katan"
    log = tmp_dir / "katan.log"
    for attempt in range(3):  # a port taken between free_port and the bind: try another
        port = free_port()
        proc = subprocess.Popen(
            [str(script), "--model", model, "--backend", "echo", "--providers", "bedrock,openai",
             "--host", "127.0.0.1", "--port", str(port), "--stats-file",
             str(tmp_dir / "katan-stats.json"), "--disable-dashboard", "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=log.open("w"),
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_http(f"{url}/health", proc, log=log)
            return proc, url
        except RuntimeError:
            stop(proc)
            if attempt == 2 or "address already in use" not in log.read_text(errors="replace").lower():
                raise
        except TimeoutError:
            stop(proc)
            raise
    raise AssertionError("unreachable")


# llama.cpp's server, loading its models as our local backend does: extra buffer types off
# (with them, llama-cpp-python built on a CPU with AMX crashes on Gemma; ratchet_ray.llm.local).
SERVE_LLAMA_CPP = f"""
import runpy, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from ratchet_ray.llm.local import llama_model_defaults
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
with llama_model_defaults(extra_buffer_types=False):
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def start_llama_server(tmp_dir: Path, config: dict, timeout: float = 120.0,
                       tries: int = 3) -> tuple[subprocess.Popen, str]:
    """Start llama.cpp's server on a free loopback port; a failed start raises with its log.

    The server lets ``HOST``/``PORT``/``CONFIG_FILE`` in the environment override the config
    file, so they are removed; a port taken between ``free_port`` and the bind is retried.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT", "CONFIG_FILE")}
    for attempt in range(tries):
        port = free_port()
        config_file = tmp_dir / "llama-server.json"
        config_file.write_text(json.dumps({**config, "host": "127.0.0.1", "port": port}))
        log = tmp_dir / f"llama-server-{attempt}.log"
        proc = subprocess.Popen([sys.executable, "-c", SERVE_LLAMA_CPP, "--config_file",
                                 str(config_file)], stdout=subprocess.DEVNULL,
                                stderr=log.open("w"), env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_http(f"{url}/v1/models", proc, timeout)
            return proc, url
        except (RuntimeError, TimeoutError) as err:
            stop(proc)
            tail = log.read_text(errors="replace")[-3000:]
            if "address already in use" in tail.lower() and attempt + 1 < tries:
                continue
            raise RuntimeError(f"{err}; llama_cpp.server log ({log}):\n{tail}") from err
    raise AssertionError("unreachable")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass
class Rule:
    path_contains: str
    status: int
    error_type: str
    message: str
    times: int | None  # None = every time


class WireProxy:
    def __init__(self, upstream: str | None, embedder=None, embed_shape: str = "by_type"):
        self.upstream = urlsplit(upstream) if upstream else None
        self.embedder = embedder
        self.embed_shape = embed_shape  # "by_type" -> {"float": [...]}, "plain" -> [[...]]
        self.rules: list[Rule] = []
        self.seen: list[str] = []
        self.embed_batches: list[int] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail(self, path_contains: str, status: int, error_type: str, message: str, times: int | None = 1):
        self.rules.append(Rule(path_contains, status, error_type, message, times))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _scripted(self, path: str) -> Rule | None:
        for rule in self.rules:
            if rule.path_contains in path and (rule.times is None or rule.times > 0):
                if rule.times is not None:
                    rule.times -= 1
                return rule
        return None

    def _embed_reply(self, body: bytes) -> bytes:
        request = json.loads(body)
        texts = request["texts"]
        self.embed_batches.append(len(texts))
        vectors = self.embedder.embed(texts, request.get("input_type", "search_document")).tolist()
        embeddings = {"float": vectors} if self.embed_shape == "by_type" else vectors
        return json.dumps({"id": "e1", "texts": texts, "embeddings": embeddings,
                           "response_type": "embeddings_by_type" if self.embed_shape == "by_type"
                           else "embeddings_floats"}).encode()

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                return

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                path = unquote(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.seen.append(path)
                rule = proxy._scripted(path)
                if rule is not None:
                    payload = json.dumps({"message": rule.message}).encode()
                    self._send(rule.status, payload, {"Content-Type": "application/json",
                                                      "x-amzn-ErrorType": rule.error_type})
                    return
                if proxy.embedder is not None and "embed" in path and path.endswith("/invoke"):
                    self._send(200, proxy._embed_reply(body), {"Content-Type": "application/json"})
                    return
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                conn.request("POST", self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                passed = {k: v for k, v in response.getheaders()
                          if k.lower() not in ("transfer-encoding", "connection", "content-length")}
                conn.close()
                self._send(response.status, data, passed)

        return Handler
