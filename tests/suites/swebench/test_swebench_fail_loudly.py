"""Issue 15 on SWE-bench: the Docker daemon goes away mid-round; the run stops with that cause.

The daemon is shared by everyone using this machine (other test sessions build and run
containers on it at the same time), so the test does not stop it. Instead the run talks to it
through a unix-socket proxy of its own (``swebench.docker_host=unix://<tmp>/docker.sock``) and
the proxy is killed once the round's eval split is recorded: from then on every Docker call of
this run's Solvers and Graders is refused or cut, exactly what they see when the daemon stops,
while the daemon and every other client are untouched. Everything else is real: the CLI
driver, Ray, the patch agent, the Docker grader and the instance images.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import ray.cloudpickle
from click.testing import CliRunner

import swebench_instances
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.suites.swebench.docker.container import LABEL_KEY, RUN_KEY, reap_containers

TRAIN, EVAL = ["ratchet__calc-1", "ratchet__calc-2"], ["ratchet__calc-3"]
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class SocketProxy:
    """``path`` -> the daemon's unix socket, byte for byte; ``kill()`` closes the listener and
    every open connection (the next connect is refused: the socket file is gone)."""

    def __init__(self, path: Path, upstream: str):
        self.path, self.upstream = path, upstream
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(64)
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        self.killed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # killed
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.upstream)
            with self.lock:
                if self.killed:  # accepted just before kill(): it must not outlive the proxy
                    client.close()
                    server.close()
                    return
                self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass  # the other side (or kill()) closed it
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed

    def kill(self) -> None:
        with self.lock:
            self.killed = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it (Linux)
        except OSError:
            pass  # killed before
        self.listener.close()
        self.path.unlink(missing_ok=True)
        with self.lock:
            for sock in self.open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed
                sock.close()


def reap_until_quiet(client, run_label: str, quiet_s: float = 5.0, deadline_s: float = 120.0):
    """Reap the run's containers until none has been seen for ``quiet_s``.

    The proxy dies between requests it already forwarded and their answers: a create the daemon
    received completes after the run stopped, and a remove it received may still be in progress
    (the reaper's own remove then gets 409 and the container is still listed). A real dead daemon
    finishes neither; here the live one finishes both, so one reap can run too early."""
    quiet_since, deadline = time.monotonic(), time.monotonic() + deadline_s
    while time.monotonic() - quiet_since < quiet_s:
        assert time.monotonic() < deadline, "the run's containers keep coming back"
        reap_containers(client, run_label)
        if client.containers.list(all=True, ignore_removed=True,
                                  filters={"label": [LABEL_KEY, f"{RUN_KEY}={run_label}"]}):
            quiet_since = time.monotonic()
        time.sleep(0.5)


class AgentScript:
    """First step fixes the bug of calc-1/calc-3 (or edits anything for the others), then done."""

    def __call__(self, messages, json_schema=None) -> str:
        text = "\n".join(m.content for m in messages)
        if text.startswith("# Failure review"):
            return json.dumps({"rationale": "scripted", "attribution": "inapplicable",
                               "pattern": "edits the wrong line", "confidence": "high"})
        if "(none yet)" not in text:
            return json.dumps({"thought": "done", "command": "", "done": True})
        return json.dumps({"thought": "edit", "done": False,
                           "command": "sed -i 's/^READY = False/READY = True/' calc/ready.py"})


@pytest.mark.docker
def test_docker_daemon_gone_mid_round_stops_the_run_with_that_cause(docker_client, ray_local,
                                                                     tmp_path):
    import fakes
    from ratchet_ray.cli.run import build_overrides
    from ratchet_ray.run_config.files import load_config
    from ratchet_ray.loop.breaker import InfraFailureStop
    from ratchet_ray.loop.driver import run_loop
    from ratchet_ray.loop.runtime import Models

    dataset = tmp_path / "instances.jsonl"
    swebench_instances.write_dataset(dataset)
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": TRAIN, "eval_ids": EVAL}))
    upstream = (os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock")
    sock = Path(f"/tmp/ratchet-proxy-{os.getpid()}-{time.monotonic_ns()}.sock")  # short path
    proxy = SocketProxy(sock, upstream.removeprefix("unix://"))
    results = tmp_path / "results"
    config = load_config([], [
        *build_overrides("swebench", rounds=1, subset=subset, dataset_path=dataset, tag="dead"),
        "swebench.namespace=null", "swebench.cache_level=instance", "swebench.memory_mb=512",
        f"swebench.docker_host=unix://{sock}", f"results_dir={results}",
        "swebench.grade_command_timeout_s=60", "swebench.instance_deadline_s=300",
        "workers.solvers=2", "workers.graders=2"])

    def kill_after_eval() -> None:
        while not list(results.glob("swebench/*/round_00/eval.json")):
            time.sleep(0.1)
        proxy.kill()

    watcher = threading.Thread(target=kill_after_eval, daemon=True)
    watcher.start()
    models = Models(llm=fakes.ScriptedLLM(AgentScript()), embedder=fakes.HashEmbedder())
    run_dir = None
    try:
        with pytest.raises(InfraFailureStop) as caught:
            run_loop(config, models=models, show_progress=False)
    finally:
        proxy.kill()
        (run_dir,) = list((results / "swebench").iterdir())
        reap_until_quiet(docker_client, str(run_dir.resolve()))  # what the dead daemon kept
    text = str(caught.value)
    assert text.startswith("round 0 train: 2 of 2 tasks failed on infrastructure"), text
    assert str(sock) in text and "Fix: start the Docker daemon" in text
    assert not (run_dir / "round_00" / "summary.json").exists(), "the round is not finished"
    assert json.loads((run_dir / "stopped.json").read_text())["kind"] == "InfraFailureStop"
    con = EvidenceStore(run_dir).connect()
    rows = con.execute("SELECT split, infra_failure FROM capsule").fetchall()
    con.close()
    assert rows == [("eval", False)], "eval is kept; train leaves nothing a resume would skip"

    # The CLI says the same, with a non-zero exit, when the daemon is gone from the start.
    from ratchet_ray.cli.run import run

    result = CliRunner().invoke(run, [
        "swebench", "--rounds", "1", "--subset", str(subset), "--dataset-path", str(dataset),
        "--set", "swebench.namespace=null", "--set", f"swebench.docker_host=unix://{sock}",
        "--set", f"results_dir={tmp_path / 'again'}", "--set", "llm.backend=openai",
        "--set", "llm.base_url=http://127.0.0.1:9/v1", "--quiet"])
    assert result.exit_code == 1
    assert "preflight failed" in result.output and "FAIL docker daemon" in result.output


def test_a_dead_daemon_is_named_by_the_address_the_client_used(tmp_path, monkeypatch):
    """No daemon on the DOCKER_HOST this process has: the failure names that address (and
    says it came from DOCKER_HOST), not the default socket."""
    from ratchet_ray.suites.swebench.docker.container import docker_client
    from ratchet_ray.suites.swebench.docker.infra import InfraFailure
    from ratchet_ray.suites.swebench.settings import SwebenchSettings

    nowhere = f"unix://{tmp_path}/no-daemon.sock"
    monkeypatch.setenv("DOCKER_HOST", nowhere)
    with pytest.raises(InfraFailure) as failure:
        docker_client(SwebenchSettings(namespace=None))
    assert failure.value.reason == "daemon_unreachable"
    assert f"no Docker daemon at {nowhere} (DOCKER_HOST)" in str(failure.value)
    assert "/var/run/docker.sock" not in str(failure.value)

    monkeypatch.delenv("DOCKER_HOST")
    elsewhere = f"unix://{tmp_path}/configured.sock"
    with pytest.raises(InfraFailure, match=f"no Docker daemon at {elsewhere} "):
        docker_client(SwebenchSettings(namespace=None, docker_host=elsewhere))
