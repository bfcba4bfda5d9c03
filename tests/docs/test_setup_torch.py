"""`make setup` takes torch from the PyTorch CPU wheel index when that index answers (the default
index's Linux wheel is the CUDA build, gigabytes), and from pip's configured indexes otherwise (a
mirror that cannot reach it, as CI's: pip would retry an unreachable index for every package).
The recipe's own line is run with `pip` replaced by `echo`: nothing is installed."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _torch_line(index: str) -> str:
    """What the torch line of the setup recipe runs with TORCH_INDEX=``index`` (pip echoed)."""
    venv = Path(sys.executable).parent.parent  # this venv: its python runs the probe
    recipe = subprocess.run(["make", "-n", "-W", "pyproject.toml", f"{venv}/bin/.installed",
                             f"VENV={venv}", f"TORCH_INDEX={index}"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    line = next(cmd for cmd in recipe.splitlines() if "torch==" in cmd and "install" in cmd)
    shown = line.replace(f"{venv}/bin/pip install", "echo pip install", 1)
    assert shown != line, line
    # No proxy: it would answer for 127.0.0.1 in the index's stead.
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return subprocess.run(["bash", "-c", shown], cwd=ROOT, capture_output=True, text=True,
                          check=True, timeout=60, env=env).stdout.strip()


def test_the_cpu_index_is_the_default():
    makefile = (ROOT / "Makefile").read_text()
    assert "TORCH_INDEX ?= https://download.pytorch.org/whl/cpu" in makefile


def test_torch_comes_from_the_cpu_index_when_it_answers():
    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the handler's API)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = f"http://127.0.0.1:{server.server_port}/whl/cpu"
        line = _torch_line(index)
        assert line.startswith("pip install -q torch==") and line.endswith(
            f" --extra-index-url {index}"), line
    finally:
        server.shutdown()


def test_an_index_that_does_not_answer_is_left_out():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    line = _torch_line(f"http://127.0.0.1:{port}/whl/cpu")
    assert line.startswith("pip install -q torch==") and "--extra-index-url" not in line, line


def test_an_empty_index_installs_from_the_configured_index_without_a_probe():
    # CI's setting (.ci/run): the recipe names no index and runs no probe at all.
    line = _torch_line("")
    assert line.startswith("pip install -q torch==") and "--extra-index-url" not in line, line
    recipe = subprocess.run(["make", "-n", "-W", "pyproject.toml", ".venv/bin/.installed",
                             "TORCH_INDEX="], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    assert "urlopen" not in recipe
    assert "make setup TORCH_INDEX=" in (ROOT / ".ci" / "run").read_text()
