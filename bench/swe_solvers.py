"""The two SWE-bench Solvers side by side: this project's shell agent (``swebench.solver=ratchet``)
and mini-swe-agent, the SWE-bench team's reference agent (``swebench.solver=mini-swe-agent``),
each attempting the same instances with the same model, limits and container, each patch then
graded by the real grader.

    python bench/swe_solvers.py                                    # the local calc/ucalc/scalc instances
    python bench/swe_solvers.py --dataset results/realcode/flask-2.3.3/instances.jsonl --limit 3

Runs in this process, no Ray: one attempt per instance and Solver, greedy (temperature 0; or
``--temperature T --seed S``, each call's seed derived from S as in a run), no skill injected, with the config's LLM backend (the local llama.cpp Gemma unless ``--set
llm.backend=...``). Prints the date, machine and command, then one markdown row per instance
and Solver (LLM calls, format errors, prompt and completion tokens, how the attempt ended, the
grade, seconds) and each Solver's totals; ``swe_solvers.json`` under ``--out`` keeps the rows.
There is no target: the table is what the two agents do with one model.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from swe_common import bench_config  # noqa: E402

SOLVERS = ("ratchet", "mini-swe-agent")


def local_dataset(path: Path) -> Path:
    """The test fixtures' local instances (calc-1..3, ucalc-1, scalc-1) in one file."""
    sys.path.insert(0, str(ROOT / "tests" / "suites" / "swebench"))
    import swebench_instances
    import unittest_instances

    rows = [i for i in swebench_instances.make_instances() if "test_hangs" not in i["FAIL_TO_PASS"]]
    rows += unittest_instances.make_instances()
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def attempt(llm, task, settings, grader, log_dir: Path, seed: int | None) -> dict:
    """One Solver's attempt at ``task`` and its grade, as a table row."""
    from ratchet_ray.suites.swebench.agent.solver import run_agent

    started = time.monotonic()
    try:
        run = run_agent(llm, task, None, settings, log_dir=log_dir, seed=seed)
        replies, steps, ended, patch = run.replies, run.steps, run.exit_status, run.patch
    except Exception as exc:  # noqa: BLE001  (recorded as the Solver role records it)
        replies, steps, patch = list(getattr(exc, "replies", [])), [], ""
        ended = f"{type(exc).__name__}: {str(exc)[:80]}"
    solve_s = time.monotonic() - started
    grade = grader.grade(task, patch)
    return {"instance": task.task_id, "solver": settings.solver, "calls": len(replies),
            "format_errors": sum(s.thought == "(invalid reply)" for s in steps),
            "input_tokens": sum(r.input_tokens for r in replies),
            "output_tokens": sum(r.output_tokens for r in replies), "ended": ended,
            "patch_lines": len(patch.splitlines()), "grade": grade.exit_status,
            "resolved": grade.passed, "solve_s": round(solve_s, 1)}


def row(r: dict) -> str:
    return (f"| {r['instance']} | {r['solver']} | {r['calls']} | {r['format_errors']} | "
            f"{r['input_tokens']} | {r['output_tokens']} | {r['ended']} | {r['patch_lines']} | "
            f"{r['grade']}{' (resolved)' if r['resolved'] else ''} | {r['solve_s']:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, help="instances.jsonl (default: the local ones)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N instances")
    parser.add_argument("--instance", action="append", default=[], help="only these ids")
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int, help="the attempts' seed (each call's derived from it)")
    parser.add_argument("--timeout", type=float, default=600, help="each grading command's limit")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="KEY=VALUE config override (e.g. llm.backend=openai)")
    parser.add_argument("--out", type=Path, default=Path("results/bench/swe_solvers"))
    args = parser.parse_args()

    from ratchet_ray.llm.registry import make_llm
    from ratchet_ray.settings.setting_label import model_label
    from ratchet_ray.suites.swebench import SwebenchSuite
    from ratchet_ray.suites.swebench.grader import SwebenchGrader
    from ratchet_ray.suites.swebench.settings import GradingLimits, settings_from_config

    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    dataset = args.dataset.resolve() if args.dataset else local_dataset(out / "local.jsonl")
    config = bench_config(dataset, out, args.timeout, [
        f"swebench.agent.max_steps={args.max_steps}", f"swebench.agent.temperature={args.temperature:g}",
        *args.overrides])
    tasks = SwebenchSuite().load_tasks(config)
    if args.instance:
        tasks = [t for t in tasks if t.task_id in args.instance]
    if args.limit:
        tasks = tasks[:args.limit]
    llm = make_llm(config.llm)
    base = settings_from_config(config)
    grader = SwebenchGrader(base, GradingLimits.of_run(config, base), out / "grader")

    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine {platform.node()} "
          f"({os.cpu_count()} CPUs, {platform.machine()}); model {model_label(config)}")
    print(f"command: python bench/swe_solvers.py {shlex.join(sys.argv[1:])}")
    sampling = (f"temperature {args.temperature:g}, seed {args.seed}" if args.temperature
                else "greedy")
    print(f"{len(tasks)} instances, max {args.max_steps} steps, {sampling}, no skill\n")
    print("| instance | solver | LLM calls | format errors | prompt tokens | completion tokens "
          "| ended | patch lines | grade | solve s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for task in tasks:
        for solver in args.solvers.split(","):
            settings = base.model_copy(update={"solver": solver})
            rows.append(attempt(llm, task, settings, grader, out / solver / task.task_id,
                                args.seed))
            print(row(rows[-1]), flush=True)
    print()
    for solver in args.solvers.split(","):
        mine = [r for r in rows if r["solver"] == solver]
        print(f"{solver}: {sum(r['resolved'] for r in mine)}/{len(mine)} resolved, "
              f"{sum(r['calls'] for r in mine)} LLM calls, "
              f"{sum(r['input_tokens'] + r['output_tokens'] for r in mine)} tokens, "
              f"{sum(r['solve_s'] for r in mine):.0f} s solving")
    (out / "swe_solvers.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
