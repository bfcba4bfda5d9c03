"""The direct-LLM baseline: every task, ``--probes`` (5) calls each, no skills; resumable.

    python -m jobs.baseline mbpp [--out results/baselines/mbpp.jsonl] [--probes 5] [--limit N]
        [--temperature 0.7] [--llm local|bedrock|openai] [--set key=value ...] [--workers N]

Contracts:
- One JSON line per (task, probe): ``suite, task_id, probe, passed, exit_status, infra_failure,
  input_tokens, output_tokens, cost_usd, latency_s, backend, model``. The line is appended and
  flushed as soon as that probe is graded, so a killed job loses only probes in flight; a rerun
  skips every (task, probe) already in the file (a torn last line is cut off first).
- The Solver is the loop's own (an empty bank, so the Router injects nothing and makes no call);
  probes differ only through sampling at ``--temperature`` (for swebench also the agent's
  ``swebench.agent.temperature``). Grading is the suite's grader; SWE-bench grader logs and agent
  trajectories go to ``<out stem>_workdir/logs/swebench/``.
- ``jobs.select_subset`` reads this file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ratchet_ray.cli.run import build_overrides


def done_probes(out: Path) -> set[tuple[str, int]]:
    """(task_id, probe) pairs already in ``out``; a torn last line (killed mid-write) is removed."""
    if not out.is_file():
        return set()
    data = out.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        out.write_bytes(data)
    return {(row["task_id"], int(row["probe"]))
            for row in map(json.loads, data.decode().splitlines()) if row}


def _row(suite: str, task_id: str, probe: int, outcome: Any, grade: Any, failure: str) -> dict:
    replies = [*outcome.router_replies, *outcome.solver_replies] if outcome is not None else []
    return {
        "suite": suite, "task_id": task_id, "probe": probe,
        "passed": bool(grade is not None and grade.passed and not failure),
        "exit_status": failure or grade.exit_status,
        "infra_failure": bool(failure) or bool(grade.infra_failure),
        "input_tokens": sum(r.input_tokens for r in replies),
        "output_tokens": sum(r.output_tokens for r in replies),
        "cost_usd": sum(r.cost_usd for r in replies),
        "latency_s": round(outcome.latency_s if outcome is not None else 0.0, 3),
        "backend": replies[-1].backend if replies else "",
        "model": replies[-1].model if replies else "",
    }


def run_baseline(config: Any, out: Path, probes: int, limit: int | None,
                 models: Any = None) -> tuple[int, int]:
    """Fill ``out`` up to ``probes`` probes per task; returns (probes run now, probes passed now).

    ``models`` (a ``loop.runtime.Models``) replaces the LLM, as in ``run_loop``.
    """
    import ray

    from actors.pools import ResilientPool, drain
    from ratchet_ray.loop.runtime import (Models, connect_ray, make_grader_factory,
                                          make_solver_factory)
    from ratchet_ray.suites import get_suite

    models = models or Models()

    tasks = get_suite(config.suite).load_tasks(config)[:limit]
    done = done_probes(out)
    todo = [(t, p) for t in tasks for p in range(probes) if (t.task_id, p) not in done]
    if not todo:
        return 0, 0
    started_ray = connect_ray()
    workdir = out.parent / f"{out.stem}_workdir"
    workdir.mkdir(parents=True, exist_ok=True)
    solvers = ResilientPool(make_solver_factory(config, workdir, models, solver_cache=False),
                            config.workers.solvers, name="solver")
    graders = ResilientPool(make_grader_factory(config, workdir), config.workers.graders,
                            name="grader")
    solvers.broadcast("set_bank", [])
    outcomes: dict[tuple[str, int], Any] = {}
    counts = [0, 0]
    try:
        with out.open("a") as sink:
            def write(row: dict) -> None:
                sink.write(json.dumps(row, sort_keys=True) + "\n")
                sink.flush()
                counts[0] += 1
                counts[1] += int(row["passed"])

            def handle(pool: ResilientPool, result: Any) -> None:
                task, probe = result.key
                if pool is solvers:
                    outcome = result.value
                    if not result.ok or outcome.exit_status != "ok":  # nothing to grade
                        status = result.exit_status if not result.ok else outcome.exit_status
                        write(_row(config.suite, task.task_id, probe, outcome, None, status))
                    else:
                        outcomes[(task.task_id, probe)] = outcome
                        graders.submit("grade", task, outcome.output, key=(task, probe))
                    return
                outcome = outcomes.pop((task.task_id, probe))
                write(_row(config.suite, task.task_id, probe, outcome, result.value,
                           "" if result.ok else result.exit_status))

            for task, probe in todo:
                solvers.submit("run", task, "baseline", probe, key=(task, probe))
            drain([solvers, graders], handle)
    finally:
        solvers.shutdown()
        graders.shutdown()
        if started_ray:
            ray.shutdown()
    return counts[0], counts[1]


@click.command("baseline")
@click.argument("suite", type=click.Choice(["mbpp", "swebench"]))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL output (default results/baselines/<suite>.jsonl).")
@click.option("--probes", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks of the suite.")
@click.option("--temperature", type=click.FloatRange(0.0, 2.0), default=0.7, show_default=True,
              help="Sampling temperature (probes differ only through sampling).")
@click.option("--llm", type=click.Choice(["local", "bedrock", "openai"]))
@click.option("--config", "config_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
@click.option("--dataset-path", type=click.Path(exists=True, path_type=Path))
@click.option("--workers", type=click.IntRange(min=1))
def main(suite: str, out: Path | None, probes: int, limit: int | None, temperature: float,
         llm: str | None, config_files: tuple, sets: tuple, dataset_path: Path | None,
         workers: int | None) -> None:
    """Direct-LLM baseline of SUITE (no skills), resumable."""
    from ratchet_ray.config import ConfigError, load_config

    overrides = build_overrides(suite, llm=llm, dataset_path=dataset_path, workers=workers)
    overrides.append(f"llm.temperature={temperature}")
    if suite == "swebench":  # the patch agent samples with its own temperature
        overrides.append(f"swebench.agent.temperature={temperature}")
    try:
        config = load_config(config_files, [*overrides, *sets])
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    out = out or Path(config.results_dir) / "baselines" / f"{suite}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    ran, passed = run_baseline(config, out, probes, limit)
    total = len(done_probes(out))
    click.echo(f"{out}: {ran} probe(s) run now ({passed} passed); {total} in the file")


if __name__ == "__main__":
    sys.exit(main())
