"""Fail loudly, not quietly (issue 15): an unreachable model or a broken sandbox stops the run
with its root cause and a non-zero exit, and never becomes a finished 0.000 round.

Real components throughout: the ``ratchet run`` command, a real local Ray, the real actors and
MBPP+ grading, and a real OpenAI-compatible server process on 127.0.0.1
(``tests/loop/model_server.py``) that is down, dies mid-round or fails one call. Each test asserts
the exit code, that the message names the cause, and which rounds were recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from model_server import free_port, start_model_server, stop
from ratchet_ray.evidence.store import EvidenceStore

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TRAIN, EVAL = ["Mbpp/2", "Mbpp/3", "Mbpp/4", "Mbpp/6"], ["Mbpp/7", "Mbpp/8", "Mbpp/9", "Mbpp/11"]


def _args(tmp_path: Path, port: int, *extra: str) -> list[str]:
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": TRAIN, "eval_ids": EVAL}))
    return ["mbpp", "--llm", "openai", "--rounds", "1", "--subset", str(subset),
            "--set", f"llm.base_url=http://127.0.0.1:{port}/v1",
            "--set", f"results_dir={tmp_path / 'results'}", "--set", "workers.solvers=2",
            "--set", "workers.graders=2", "--set", "curator.min_trials=1", *extra]


def _run(args: list[str]):
    from ratchet_ray.cli.run import run

    return CliRunner().invoke(run, args, catch_exceptions=False)


def _run_dir(tmp_path: Path) -> Path:
    (found,) = list((tmp_path / "results" / "mbpp").iterdir())
    return found


def _capsules(run_dir: Path) -> list[tuple]:
    with EvidenceStore(run_dir).connect() as con:
        return con.execute("SELECT split, task_id, infra_failure, exit_status FROM capsule "
                           "ORDER BY split, task_id").fetchall()


@pytest.fixture
def quick_openai(monkeypatch):
    """No client-side retries: each refused call fails at once (the breaker counts it)."""
    monkeypatch.setenv("RATCHET_OPENAI_MAX_RETRIES", "0")


def test_model_server_down_at_start_stops_before_any_round(ray_local, tmp_path, quick_openai):
    port = free_port()  # nothing listens there
    result = _run(_args(tmp_path, port))

    assert result.exit_code == 1, result.output
    assert "preflight failed, no round was run" in result.output
    assert "FAIL llm (openai)" in result.output and f"127.0.0.1:{port}" in result.output
    assert "fix: start the server and set llm.base_url" in result.output
    run_dir = _run_dir(tmp_path)
    assert not list(run_dir.glob("round_*")), "no round may be created"
    assert "preflight" in json.loads((run_dir / "stopped.json").read_text())["cause"]


def test_model_server_dying_mid_round_stops_and_resume_retries(ray_local, tmp_path,
                                                               quick_openai):
    port = free_port()
    # 1 preflight call + 4 eval tasks + 1 train task are answered, then the server dies.
    server = start_model_server(port, "--die-after", "6")
    try:
        result = _run(_args(tmp_path, port, "--quiet"))
    finally:
        stop(server)
    assert result.exit_code == 1, result.output
    out = result.output
    assert "round 0 train: 3 of 4 tasks failed on infrastructure" in out, out
    assert "above infra.max_failure_rate 0.50" in out and "the round is not recorded" in out
    assert "Root cause (first, on Mbpp/" in out and "LLMError" in out
    assert "Most common (" in out and "of 3): LLMError" in out, "the commonest cause, counted"
    assert "ActorDiedError" not in out and "drain:" not in out
    run_dir = _run_dir(tmp_path)
    assert not (run_dir / "round_00" / "summary.json").exists()
    capsules = _capsules(run_dir)
    # Eval finished before the death; train keeps at most its one answered attempt and no infra
    # rows, so --resume retries the lost tasks.
    assert sorted(c[1] for c in capsules if c[0] == "eval") == sorted(EVAL)
    assert not [c for c in capsules if c[2]], "no infra-failure capsule is left behind"
    assert len([c for c in capsules if c[0] == "train"]) <= 1

    server = start_model_server(port)
    try:
        resumed = _run(["--resume", str(run_dir), "--quiet"])
    finally:
        stop(server)
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads((run_dir / "round_00" / "summary.json").read_text())
    assert (summary["eval"]["total"], summary["train"]["total"]) == (4, 4)
    assert summary["train"]["infra_failures"] == 0
    assert sorted(c[1] for c in _capsules(run_dir) if c[0] == "train") == sorted(TRAIN)
    assert not (run_dir / "stopped.json").exists()


def test_one_transient_failure_below_the_threshold_is_counted_and_shown(ray_local, tmp_path,
                                                                        quick_openai):
    port = free_port()
    server = start_model_server(port, "--fail-once", "3")  # one eval call gets an HTTP 500
    try:
        result = _run(_args(tmp_path, port))
    finally:
        stop(server)
    assert result.exit_code == 0, result.output
    assert "infra failures 1" in result.output, "the progress line shows the failure"
    run_dir = _run_dir(tmp_path)
    summary = json.loads((run_dir / "round_00" / "summary.json").read_text())
    assert summary["eval"]["infra_failures"] == 1 and summary["eval"]["total"] == 4
    infra = [c for c in _capsules(run_dir) if c[2]]
    assert len(infra) == 1 and infra[0][0] == "eval" and infra[0][3] == "LLMError"


FAKE_BWRAP = """#!/bin/sh
# The sandbox probe (`bwrap --help`, then `bwrap ... python -c pass`) passes; every real sandbox
# start fails, as when a seccomp profile or an exhausted user-namespace quota stops bwrap later.
if [ "$1" = "--help" ]; then echo "--disable-userns --size --die-with-parent"; exit 0; fi
for last; do :; done
[ "$last" = "pass" ] && exit 0
echo "bwrap: No permissions to creating new namespace" >&2
exit 1
"""


@pytest.mark.slow
def test_a_sandbox_that_cannot_start_stops_the_run(tmp_path):
    """The fake ``bwrap`` goes first on PATH of a driver process of its own (its own local Ray,
    so its graders inherit that PATH); everything else is real."""
    # world-readable: as root the sandbox starts bwrap under an unprivileged per-grade uid
    fake_bin = Path(tempfile.mkdtemp(prefix="fake-bwrap-"))
    fake_bin.chmod(0o755)
    (fake_bin / "bwrap").write_text(FAKE_BWRAP)
    (fake_bin / "bwrap").chmod(0o755)
    port = free_port()
    server = start_model_server(port)
    env = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
           "RATCHET_OPENAI_MAX_RETRIES": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    try:
        proc = subprocess.run([sys.executable, "-m", "jobs.skill_loop",
                               *_args(tmp_path, port, "--quiet")], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
    finally:
        stop(server)
        shutil.rmtree(fake_bin, ignore_errors=True)
    assert proc.returncode == 1, proc.stderr[-3000:]
    err = proc.stderr
    assert "round 0 eval: 3 of 4 tasks failed on infrastructure" in err, err[-3000:]
    assert "sandbox_setup_error" in err and "Fix: the MBPP+ sandbox cannot run code" in err
    run_dir = _run_dir(tmp_path)
    assert not list(run_dir.glob("round_*/summary.json"))
    assert not [c for c in _capsules(run_dir) if c[2]], "no infra capsule left to skip on resume"
