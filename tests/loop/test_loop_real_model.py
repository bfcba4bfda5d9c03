"""The real thing, end to end: the local Gemma model, real evalplus grading, real Ray.

- ``python -m jobs.skill_loop`` on a local Ray it starts itself, then ``ratchet query`` and
  ``ratchet plot`` on the run dir;
- a real Ray head on 127.0.0.1 (``ray start --head``) and the same job through ``ray job submit``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ratchet_ray.loop.ray_head import free_port, own_port_flags

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
ENV.pop("RAY_ADDRESS", None)


def ratchet(*args: str) -> str:
    proc = subprocess.run([str(BIN / "ratchet"), *args], cwd=ROOT,
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def check_run_dir(run_dir: Path, rounds: int, n_train: int, n_eval: int) -> None:
    for name in ("config.yaml", "train_ids.json", "eval_ids.json", "run.log", "loop.json"):
        assert (run_dir / name).is_file(), name
    assert len(json.loads((run_dir / "train_ids.json").read_text())) == n_train
    loop = json.loads((run_dir / "loop.json").read_text())
    assert [r["round"] for r in loop["rounds"]] == list(range(rounds))
    for r in range(rounds):
        summary = json.loads((run_dir / f"round_{r:02d}" / "summary.json").read_text())
        assert (summary["eval"]["total"], summary["train"]["total"]) == (n_eval, n_train)
        assert summary["input_tokens"] > 0 and summary["failed_steps"] == []
        assert (run_dir / "checkpoints" / f"round_{r + 1:02d}" / "manifest.json").is_file()


@pytest.mark.slow
def test_local_model_loop_end_to_end_with_evalplus_grading_and_query(tmp_path):
    proc = subprocess.run(
        [str(BIN / "python"), "-m", "jobs.skill_loop", "mbpp", "--rounds", "2", "--n-train", "3",
         "--n-eval", "2", "--tag", "e2e", "--set", f"results_dir={tmp_path}", "--quiet"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert run_dir.parent == tmp_path / "mbpp" and run_dir.name.endswith("_e2e")
    check_run_dir(run_dir, rounds=2, n_train=3, n_eval=2)

    counts = json.loads(ratchet("--db", str(run_dir), "query", "--format", "json",
                                "SELECT round, split, count(*) AS n, count(DISTINCT task_id) AS "
                                "tasks FROM capsule GROUP BY ALL ORDER BY ALL"))
    assert [(c["round"], c["split"], c["n"], c["tasks"]) for c in counts] == [
        (0, "eval", 2, 2), (0, "train", 3, 3), (1, "eval", 2, 2), (1, "train", 3, 3)]
    graded = json.loads(ratchet("--db", str(run_dir), "query", "--format", "json",
                                "SELECT exit_status, grader_trace, output, infra_failure "
                                "FROM capsule"))
    # Real model output went through the real grader: traces name the sandbox, no infra failure.
    assert all(g["grader_trace"].startswith("[sandbox") or g["exit_status"] in
               ("no_code", "missing_entry_point") for g in graded)
    assert not any(g["infra_failure"] for g in graded)
    calls = json.loads(ratchet("--db", str(run_dir), "query", "--format", "json",
                               "SELECT DISTINCT backend, role FROM llm_call ORDER BY ALL"))
    assert {c["backend"] for c in calls} == {"local"} and {"solver"} <= {c["role"] for c in calls}
    ratchet("plot", str(run_dir))
    assert (run_dir / "loop_curve.png").stat().st_size > 10_000
    assert "round-0 eval pass@1" in (run_dir / "loop_summary.md").read_text()


# What `ray job submit` says while the head is still starting (the job was not submitted).
TRANSIENT = ("Failed to connect", "No available agent", "try again later")


@pytest.mark.slow
def test_ray_job_submit_to_a_real_head_on_loopback(tmp_path):
    temp = Path(tempfile.mkdtemp(prefix="rh", dir="/tmp"))  # Ray's socket paths must stay short
    port, dashboard = free_port(), free_port()
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
         f"--port={port}", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
         *own_port_flags(), "--disable-usage-stats", "--num-cpus=2", f"--temp-dir={temp}"],
        cwd=temp, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        runtime_env = {"env_vars": {"HF_HUB_OFFLINE": "1",
                                    "MBPP_OVERRIDE_PATH": os.environ.get("MBPP_OVERRIDE_PATH", "")}}
        submit = [str(BIN / "ray"), "job", "submit", "--address", f"http://127.0.0.1:{dashboard}",
                  "--working-dir", ".", "--runtime-env-json", json.dumps(runtime_env), "--",
                  "python", "-m", "jobs.skill_loop", "mbpp", "--rounds", "1", "--n-train", "2",
                  "--n-eval", "2", "--set", f"results_dir={tmp_path}", "--quiet"]
        deadline = time.monotonic() + 180
        while True:  # the job server and its agent come up a few seconds after the head
            proc = subprocess.run(submit, cwd=ROOT, env={**ENV, "RAY_AUTH_MODE": "token"},
                                  capture_output=True, text=True, timeout=1500)
            if proc.returncode == 0 or time.monotonic() > deadline or "succeeded" in proc.stdout:
                break
            if not any(m in proc.stdout + proc.stderr for m in TRANSIENT):
                break
            time.sleep(3)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        assert "succeeded" in proc.stdout + proc.stderr
    finally:
        head.send_signal(signal.SIGTERM)  # --block: the head drains and stops what it started
        try:
            head.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=30)
        shutil.rmtree(temp, ignore_errors=True)  # Ray's session logs; nothing to keep
    run_dirs = list((tmp_path / "mbpp").iterdir())
    assert len(run_dirs) == 1
    check_run_dir(run_dirs[0], rounds=1, n_train=2, n_eval=2)
