"""`make run`, the README's first command, shows the loop on the local model: a skill learned in
round 0 is routed to tasks in round 1, and the run's closing lines say so in words, with the eval
pass@1's n and a noise verdict. Two seeds, as a user would run them (the Makefile's quickstart
flags, the real Gemma through llama.cpp, the real MBPP+ sandbox); docs/benchmarks.md has the
table over five seeds (bench/quickstart_seeds.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet_ray.report.learned import learned_skills

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.parametrize("seed", [1, 2])
def test_the_quickstart_learns_a_skill_and_routes_it(seed, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    flags = f"--seed {seed} --quiet --set results_dir={tmp_path}"
    proc = subprocess.run(["make", "-s", "run", f"VENV={VENV}", f"RUN_FLAGS={flags}"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert run_dir.parent.parent == tmp_path  # results/<suite>/<run>: the run this test made
    routed = [s for s in learned_skills(run_dir) if s.round == 0 and s.routed]
    assert routed, f"no round-0 skill was routed in round 1:\n{proc.stderr[-3000:]}"
    skill = routed[0]
    told = proc.stderr.splitlines()
    assert any(line.startswith(f"skill {skill.skill_id}, learned in round 0") and
               "was routed to" in line and "in round 1:" in line for line in told), told[-5:]
    eval_line = next(line for line in told if line.startswith("eval pass@1"))
    assert "(n=3) in round 0" in eval_line and "(n=3) in round 1" in eval_line, eval_line
    assert "within noise" in eval_line or "outside sampling noise" in eval_line, eval_line
