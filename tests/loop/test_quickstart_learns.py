"""`make run`, the README's first command, shows the loop on the local model: a skill learned in
round 0 is routed to tasks in round 1, and the run's closing lines say so in words, with the eval
pass@1's n and a noise verdict. One seed, as a user would run it (the Makefile's quickstart
flags, the real Gemma through llama.cpp, the real MBPP+ sandbox): about five minutes of CI's two
cores. How often it shows this over seeds is a benchmark, not a test: docs/benchmarks.md has the
table over five seeds (bench/quickstart_seeds.py, which tests/bench runs at a tiny size)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet_ray.report.learned import learned_skills

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.model
def test_the_quickstart_learns_a_skill_and_routes_it(tmp_path):
    """Through bench/quickstart_seeds.py at seed 1 (its tiny run: one seed, the quickstart's own
    flags), so the bench's row is checked against the same run."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "quickstart_seeds.py"), "--seeds",
                           "1", "--results", str(tmp_path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    told = (tmp_path / "seed1.stderr.log").read_text().splitlines()
    (run_dir,) = (tmp_path / "mbpp").iterdir()  # results/<suite>/<run>: the run this test made
    routed = [s for s in learned_skills(run_dir) if s.round == 0 and s.routed]
    assert routed, "no round-0 skill was routed in round 1:\n" + "\n".join(told[-40:])
    skill = routed[0]
    assert any(line.startswith(f"skill {skill.skill_id}, learned in round 0") and
               "was routed to" in line and "in round 1:" in line for line in told), told[-5:]
    eval_line = next(line for line in told if line.startswith("eval pass@1"))
    assert "(n=3) in round 0" in eval_line and "(n=3) in round 1" in eval_line, eval_line
    assert "within noise" in eval_line or "outside sampling noise" in eval_line, eval_line
    # The bench's row and target line, from the same run.
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("| 1 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "1" and cells[2].startswith("r0: "), row  # learned in r0, routed in r1
    assert re.search(r"skill learned then routed: 1/1; slowest run / 300 s budget = "
                     r"\d+\.\d\d", proc.stdout), proc.stdout
