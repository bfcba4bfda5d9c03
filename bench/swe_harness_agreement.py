"""SWE-bench verdicts: ours against the official harness (``swebench.harness.run_evaluation``)
on the same predictions, exported by ``ratchet export --predictions``.

    python bench/swe_harness_agreement.py [--workers 2] [--forgeries N|NAME,...] [--kinds gold,forgery]
                                          [--instances ID,...] [--json OUT]

Needs Docker and the base image of ``.ci/docker_setup.sh``; no network. The corpus, on the local
instances of ``tests/suites/swebench/`` (the pytest repository ``ratchet/calc`` and the
django/sympy-style stand-ins):

- ``gold``: each instance's gold patch (must resolve; ``ratchet__calc-3``'s gold fixes a test that
  hangs until fixed);
- ``wrong``: a patch that edits only the README (must not resolve; on ``ratchet__calc-3`` the
  test hangs into the timeout);
- ``honest``: the unusual but honest fixes of ``honest_patches.BUNDLES`` (must resolve);
- ``forgery``: the forgery corpus (``forgeries.py``, ``differential_forgeries.py``): patches
  that leave ``add`` broken and make the tests report a pass.

Each patch is graded once by this project's Grader (every layer on, as a run grades) and recorded
as a capsule of a run dir made for the bench, one round per patch set so that no instance
repeats within a round (round 0 gold, 1 wrong, then one round per honest bundle and forgery).
Each round is exported with ``export_predictions`` (what ``ratchet export --predictions --round
R`` writes) and graded by the official harness, run as its command line in a fresh folder (its
logs go to ``./logs``), on the very images our Grader used: the harness reads the image name from
each instance's ``image`` field, and the local images are named as swebench names them
(``sweb.eval.x86_64.<id>:latest``), so it finds them and pulls nothing. Prints a Markdown table
(per kind: agreement, resolved by each side) and every disagreement with both sides' statuses.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "suites" / "swebench"))

MODEL = "agreement-corpus"
TAG = "agreement"
"""The images' tag: the bench's own, so no other process that clears the suite's ``latest``
images removes them between our grade and the harness's."""
WRONG = ("diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n"
         " calc: a tiny library used to test the SWE-bench harness.\n+See the tests.\n")


def corpus(rows: list[dict], forgeries: int | list[str] | None, kinds: set[str]
           ) -> list[tuple[int, str, str, str, str]]:
    """``(round, instance_id, kind, name, patch)`` of ``kinds``: no instance twice in a round.
    ``forgeries``: every forgery (None), the first N by name, or these names (``SystemExit``
    naming the known ones for a name the corpus lacks)."""
    import differential_forgeries
    import honest_patches
    from forgeries import FORGERIES

    out = [(0, r["instance_id"], "gold", "gold", r["patch"]) for r in rows]
    out += [(1, r["instance_id"], "wrong", "readme_only", _wrong_for(r)) for r in rows]
    calc1 = "ratchet__calc-1"
    extra = [("honest", name, honest_patches.patch_of(names))
             for name, names in honest_patches.BUNDLES.items()]
    forged = {**FORGERIES, **{n: p for n, (p, _) in differential_forgeries.FORGERIES.items()}}
    if isinstance(forgeries, list):
        unknown = sorted(set(forgeries) - set(forged))
        if unknown:
            sys.exit(f"--forgeries: no forgery named {', '.join(unknown)}; known: "
                     f"{', '.join(sorted(forged))}")
        names = forgeries
    else:
        names = sorted(forged)[:forgeries] if forgeries is not None else sorted(forged)
    extra += [("forgery", name, forged[name]) for name in names]
    if not any(r["instance_id"] == calc1 for r in rows):  # the honest fixes and forgeries are its
        extra = []
    out += [(2 + i, calc1, kind, name, patch) for i, (kind, name, patch) in enumerate(extra)]
    return [item for item in out if item[2] in kinds]


def _count_or_names(text: str) -> int | list[str]:
    return int(text) if text.isdigit() else [name for name in text.split(",") if name]


def _wrong_for(row: dict) -> str:
    """A patch that changes no code: the README of ``ratchet/calc``; elsewhere a new file."""
    if row["repo"] == "ratchet/calc":
        return WRONG
    return ("diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+nothing fixed here\n")


def grade_ours(work: Path, rows: list[dict], items: list, timeout_s: float) -> Path:
    """Grade every item with our Grader; record each as a capsule of the bench's run dir."""
    from swe_common import bench_config
    from ratchet_ray.evidence.store import EvidenceStore
    from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
    from ratchet_ray.suites.swebench.grader import SwebenchGrader
    from ratchet_ray.suites.swebench.settings import GradingLimits, settings_from_config
    from ratchet_ray.types import Capsule, capsule_id

    dataset = work / "local.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = bench_config(dataset, work, timeout_s, [f"swebench.tag={TAG}"])
    settings = settings_from_config(config)
    tasks = {i["instance_id"]: to_task(i) for i in normalize_all(rows, "local")}
    run = work / "swebench_agreement"
    run.mkdir()
    (run / "config.yaml").write_text(f"suite: swebench\nllm:\n  model: {MODEL}\n")
    grader = SwebenchGrader(settings, GradingLimits.of_run(config, settings), run / "logs")
    store = EvidenceStore(run)
    for round_, instance_id, kind, name, patch in items:
        started = time.monotonic()
        result = grader.grade(tasks[instance_id], patch)
        print(f"ours  r{round_:02d} {instance_id} {kind}/{name}: {result.exit_status} "
              f"({time.monotonic() - started:.0f} s)", flush=True)
        store.append("capsule", round_, [Capsule(
            capsule_id=capsule_id(run.name, round_, "eval", instance_id), run_id=run.name,
            round=round_, split="eval", task_id=instance_id, skill_id="NONE",
            passed=result.passed, exit_status=result.exit_status,
            infra_failure=result.infra_failure, output=patch)])
    return run


def grade_harness(work: Path, rows: list[dict], run: Path, rounds: list[int], workers: int,
                  timeout_s: int) -> dict[tuple[int, str], str]:
    """``{(round, instance_id): status}`` from the official harness (``official_harness``), one
    harness run per round exported with ``export_predictions``."""
    from official_harness import harness_dataset, official_grades
    from ratchet_ray.report.predictions import export_predictions
    from ratchet_ray.suites.swebench.docker.images import image_name
    from ratchet_ray.suites.swebench.settings import SwebenchSettings

    local = SwebenchSettings(namespace=None, tag=TAG)
    dataset = harness_dataset(rows, work / "harness.jsonl", lambda i: image_name(i, local))
    out: dict[tuple[int, str], str] = {}
    for round_ in rounds:
        preds = work / f"predictions_r{round_:02d}.jsonl"
        export_predictions(run, preds, round_=round_)
        started = time.monotonic()
        grades = official_grades(dataset, preds, work / f"harness_r{round_:02d}",
                                 f"agreement-r{round_:02d}", workers, timeout_s)
        out.update({(round_, i): status for i, status in grades.items()})
        print(f"harness r{round_:02d}: {sorted(grades.items())} "
              f"({time.monotonic() - started:.0f} s)", flush=True)
    return out


def table(items: list, ours: dict, theirs: dict) -> str:
    lines = ["| kind | patches | agree | resolved: ours | resolved: harness |",
             "|---|---|---|---|---|"]
    for kind in ("gold", "wrong", "honest", "forgery"):
        keys = [(r, i) for r, i, k, _, _ in items if k == kind]
        if not keys:
            continue
        agree = sum(ours[k][0] == (theirs.get(k) == "resolved") for k in keys)
        lines.append(f"| {kind} | {len(keys)} | {agree}/{len(keys)} | "
                     f"{sum(ours[k][0] for k in keys)} | "
                     f"{sum(theirs.get(k) == 'resolved' for k in keys)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="the harness's --max_workers")
    parser.add_argument("--forgeries", type=_count_or_names, default=None,
                        help="only the first N forgeries (by name), or these (comma list); "
                             "default every one")
    parser.add_argument("--timeout", type=int, default=60, help="per-command test timeout, s")
    parser.add_argument("--json", type=Path, help="also write the verdicts here")
    parser.add_argument("--kinds", default="gold,wrong,honest,forgery",
                        help="which patch kinds (comma list)")
    parser.add_argument("--instances", default=None,
                        help="only these instances (comma list; default every local one)")
    args = parser.parse_args()
    import swebench_instances
    import unittest_instances
    from ratchet_ray.evidence.store import EvidenceStore

    rows = swebench_instances.make_instances() + unittest_instances.make_instances()
    if args.instances:
        rows = [r for r in rows if r["instance_id"] in args.instances.split(",")]
    items = corpus(rows, args.forgeries, set(args.kinds.split(",")))
    work = Path(tempfile.mkdtemp(prefix="ratchet-harness-agreement-"))
    started = time.monotonic()
    run = grade_ours(work, rows, items, args.timeout)
    ours_s = time.monotonic() - started
    with EvidenceStore(run).connect() as con:
        ours = {(r, t): (p, s) for r, t, p, s in con.execute(
            "SELECT round, task_id, passed, exit_status FROM capsule").fetchall()}
    started = time.monotonic()
    theirs = grade_harness(work, rows, run, sorted({i[0] for i in items}), args.workers,
                           args.timeout)
    harness_s = time.monotonic() - started
    print()
    print(table(items, ours, theirs))
    print()
    for r, instance_id, kind, name, _ in items:
        key = (r, instance_id)
        if ours[key][0] != (theirs.get(key) == "resolved"):
            print(f"- {kind} {name} on {instance_id}: ours {ours[key][1]}, harness "
                  f"{theirs.get(key, 'no report')}")
    print(f"\nours {ours_s:.0f} s for {len(items)} grades; harness {harness_s:.0f} s "
          f"({len({i[0] for i in items})} harness runs); work folder {work}")
    if args.json:
        args.json.write_text(json.dumps([
            {"round": r, "instance_id": i, "kind": k, "name": n, "ours": ours[(r, i)][1],
             "ours_resolved": ours[(r, i)][0], "harness": theirs.get((r, i))}
            for r, i, k, n, _ in items], indent=1))


if __name__ == "__main__":
    main()
