"""A throwaway target repo for the experiment engine, with a frozen evaluator driven by a file.

``params.txt`` (editable) holds ``key = value`` lines the evaluator reads:
- ``value``: the scalar (mean of the per-seed scalars ``value - spread, value, value + spread``);
- ``mode``: ``crash`` (exit 1), ``sleep`` (sleeps 60 s after writing its pid), ``veto`` (a veto),
  ``nocontract`` (exits 0 without a contract line), ``hang`` (like sleep, but only while the
  flag file ``HANG_FLAG`` exists; otherwise ignored);
- ``lower``: ``1`` reports ``lower_is_better: true``;
- every run also writes ``scratch/out.txt`` (an untracked file the attempt creates).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from ratchet_ray.experiment.engine import ExperimentEngine, ExperimentReport, ExperimentSettings
from ratchet_ray.experiment.ledger import LEDGER_FILE, Ledger, LedgerRow
from ratchet_ray.experiment.proposals import ScriptProposer

EVALUATOR = '''\
import json, os, sys, time
from pathlib import Path

params = dict(line.split(" = ", 1) for line in Path("params.txt").read_text().splitlines() if " = " in line)
mode = params.get("mode", "").strip()
os.makedirs("scratch", exist_ok=True)
Path("scratch/out.txt").write_text("evaluator scratch")
print("evaluating", params, file=sys.stderr)
if mode == "crash":
    raise SystemExit("boom: the candidate crashed the evaluator")
if mode == "sleep" or (mode == "hang" and Path({flag!r}).exists()):
    Path({pidfile!r} + ".tmp").write_text(str(os.getpid()))
    os.replace({pidfile!r} + ".tmp", {pidfile!r})  # whole once there: a test acts on it
    time.sleep(60)
value, spread = float(params["value"]), float(params.get("spread", "0"))
per_seed = [value - spread, value, value + spread]
print("log line " * 20)
if mode == "nocontract":
    raise SystemExit(0)
print(json.dumps({{"scalar": sum(per_seed) / 3, "vetoes": ["too costly"] if mode == "veto" else [],
                  "metrics": {{"scalar_per_seed": per_seed}}, "seeds": [42, 7, 13],
                  "lower_is_better": params.get("lower", "").strip() == "1"}}))
'''

GIT_ID = ["-c", "user.name=test", "-c", "user.email=test@localhost"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *GIT_ID, *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, value: float = 1.0) -> Path:
    repo = root / "target"
    (repo / "data").mkdir(parents=True)
    (repo / "params.txt").write_text(f"value = {value}\n")
    (repo / "evaluate.py").write_text(EVALUATOR.format(flag=str(root / "HANG_FLAG"),
                                                       pidfile=str(root / "eval.pid")))
    (repo / "data" / "labels.txt").write_text("frozen data\n")
    (repo / "notes.txt").write_text("neither editable nor protected\n")
    (repo / "program.md").write_text("# Goal\nRaise the value.\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


def demo_repo(root: Path) -> Path:
    """A committed git copy of ``examples/experiment_demo`` under ``root``."""
    import shutil

    demo = root / "experiment_demo"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "experiment_demo", demo,
                    ignore=shutil.ignore_patterns("__pycache__"))
    git(demo, "init", "-q")
    git(demo, "add", "-A")
    git(demo, "commit", "-qm", "demo start")
    return demo


def params(value: Any, **extra: Any) -> dict[str, Any]:
    """A proposal rewriting params.txt."""
    lines = [f"value = {value}", *(f"{k} = {v}" for k, v in extra.items())]
    return {"reasoning": f"try value {value} {extra}".strip(),
            "edits": [{"path": "params.txt", "content": "\n".join(lines) + "\n"}]}


def write_script(root: Path, proposals: list[dict[str, Any]], name: str = "proposals.yaml") -> Path:
    path = root / name
    path.write_text(yaml.safe_dump(proposals))
    return path


def settings(repo: Path, **overrides: Any) -> ExperimentSettings:
    base = dict(repo=repo, editable=["params.txt"], protected=["data/**"],
                evaluator=f"{sys.executable} evaluate.py", name="t", max_iterations=25,
                budget_s=300, patience=None)
    return ExperimentSettings(**{**base, **overrides})


def run(repo: Path, script: Path, **overrides: Any) -> ExperimentReport:
    return ExperimentEngine(settings(repo, **overrides), ScriptProposer(script)).run()


def rows(repo: Path) -> list[LedgerRow]:
    return Ledger(repo / LEDGER_FILE).rows()


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of the worktree except git's own, the ledger and the run artifacts."""
    skip = (".git", ".ratchet-experiment", LEDGER_FILE)
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and p.relative_to(repo).parts[0] not in skip}
