"""The real thing, end to end: the local Gemma model, real evalplus grading, real Ray.

docs/cluster.md's local-head recipe as written: a real Ray head on 127.0.0.1 (``ray start
--head``) and ``python -m jobs.skill_loop mbpp`` through ``ray job submit``, from a shell where
the venv is not active; then ``ratchet query`` and ``ratchet plot`` on the run dir it made. One
run of the real model serves both (each costs minutes of CPU); a run on the local Ray that
``jobs.skill_loop`` starts itself is the scripted and sim tests' (``tests/suites/test_custom_suite_entry_points.py``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
ENV.pop("RAY_ADDRESS", None)
# The quickstart's caps (Makefile QUICKSTART_FLAGS): a base model's runaway answer stops at 256
# tokens and its verdicts at 120, as `make run` sets them.
QUICK_CAPS = ("--set", "llm.max_tokens=256", "--set", "llm.roles.critic.max_tokens=120")


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


README_JOB = "-- python -m jobs.skill_loop mbpp"
"""How the README's local-head recipe ends its ``ray job submit`` line (the job's arguments)."""


def readme_local_head_recipe() -> str:
    """The local-head recipe of docs/cluster.md: the bash block after "A local head works the
    same way"."""
    text = (ROOT / "docs" / "cluster.md").read_text()
    match = re.search(r"A local head works the same way[^\n]*\n+```bash\n(.*?)```", text, re.S)
    assert match, "docs/cluster.md: the local-head recipe block is gone"
    return match.group(1)


def check_evidence(run_dir: Path) -> None:
    """The run's evidence through ``ratchet query`` and its curve through ``ratchet plot``:
    every capsule once (impossible twins, the cheat probe's re-grades, aside), real model output
    through the real sandbox, only local-model calls."""
    counts = json.loads(ratchet("--db", str(run_dir), "query", "--format", "json",
                                "SELECT round, split, count(*) AS n, count(DISTINCT task_id) AS "
                                "tasks FROM capsule WHERE NOT impossible GROUP BY ALL ORDER BY ALL"))
    assert [(c["round"], c["split"], c["n"], c["tasks"]) for c in counts] == [
        (0, "eval", 2, 2), (0, "train", 3, 3)]
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


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.exclusive  # `ray stop --force` and Ray's default ports: no other test may run
def test_readme_local_head_recipe_runs_the_local_model_end_to_end(tmp_path):
    """The README's recipe, line by line as written, from the repo root in a shell where the
    venv is NOT active (a new user's): ``source .venv/bin/activate``, ``ray start --head``, ``ray
    job submit ... -- python -m jobs.skill_loop mbpp`` and ``ray stop``. The one change: the job
    gets a small run's flags (1 round, 3 + 2 tasks, an absolute results dir, the quickstart's
    token caps) after its command. Then the run dir it left is queried and plotted. One round:
    the door is what this test adds (a second round on the real model, about 75 s of CI, is
    test_quickstart_learns' own)."""
    import ray

    recipe = readme_local_head_recipe()
    submits = [line for line in recipe.splitlines() if line.startswith("ray job submit")]
    assert len(submits) == 1 and submits[0].endswith(README_JOB), submits
    small = (f" --rounds 1 --n-train 3 --n-eval 2 --set results_dir={tmp_path} --quiet "
             + " ".join(QUICK_CAPS))
    script = recipe.replace(submits[0], submits[0] + small)
    # `ray stop` stops every Ray of this user: this process's own local Ray goes first (the
    # ray_local fixture starts a fresh one for the next test that asks).
    ray.shutdown()
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "RAY_ADDRESS", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                  if Path(p).resolve() != BIN.resolve())
    env["HF_HUB_OFFLINE"] = "1"  # no hub on this machine; the model ships as a package
    # Output to a file, not a pipe: the head `ray start` leaves behind holds its inherited
    # descriptors, so a pipe would stay open after a failed line until the timeout.
    log = tmp_path / "recipe.log"
    try:
        with log.open("w") as sink:
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, env=env,
                                  stdout=sink, stderr=subprocess.STDOUT, timeout=1500)
    finally:
        subprocess.run([str(BIN / "ray"), "stop", "--force"], env=env, capture_output=True,
                       timeout=120)  # the recipe's own `ray stop` did not run if a line failed
    output = log.read_text()
    assert proc.returncode == 0, output[-4000:]
    assert "succeeded" in output, output[-4000:]
    run_dirs = list((tmp_path / "mbpp").iterdir())
    assert len(run_dirs) == 1
    check_run_dir(run_dirs[0], rounds=1, n_train=3, n_eval=2)
    check_evidence(run_dirs[0])
