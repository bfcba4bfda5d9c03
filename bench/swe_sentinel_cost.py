"""What the grader's sentinel pytest plugin costs per test, on the throughput bench's repositories.

    python bench/swe_sentinel_cost.py [--runs 5] [--repos fast,medium,slow] [--plugin PATH]
                                      [--image ratchet-swe-base]

For each repository of ``bench/swe_instances.py`` (``fast`` 60 tests, ``medium`` 120, ``slow`` 40
with 2 s of sleeps; ``--repos`` picks some) the tree is written to a temporary folder and mounted
at ``/testbed`` of one container of the base image (``--network none``); inside it, ``--runs``
times each and alternately, pytest runs the repository's tests plainly (as the eval script
does: ``-rA -p no:cacheprovider`` and a JUnit report) and with the sentinel loaded as the grader loads it (the
module filled in by ``Sentinel.fresh``, first on ``PYTHONPATH``, ``-p`` in ``PYTEST_ADDOPTS``).
Alternating runs in one container share the same load, so the difference of the medians is the
plugin's. Printed per repository, for the wall time and for the CPU time (user + system) of the
pytest process: both medians and their difference per test (the figure to keep small: it grows
with a repository's test count, whatever the tests cost; the sentinel's fixed cost per run is
spread over the tests in it); how many checks the plugin made, full and quick, and the time
each kind took on average (a plugin that counts them); and whether every sentinel result says the session finished with no finding (it
must: these are honest runs). ``--plugin`` measures another version of ``sentinel_plugin.py`` (e.g. the one
before a change, ``git show REV:ratchet_ray/suites/swebench/integrity/sentinel_plugin.py``) in its place.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from ratchet_ray.suites.swebench.integrity.sentinel import Sentinel  # noqa: E402
from swe_instances import REPOS, TEST_COUNTS, _files  # noqa: E402

PLUGIN_DIR = "/sentinel"
RESULTS = "/results"


def plugin_source(sentinel: Sentinel, plugin: Path | None) -> str:
    """The sentinel module as the grader stages it, or ``plugin``'s text filled in alike."""
    if plugin is None:
        return sentinel.source
    text = plugin.read_text()
    values = {"RESULT_STEM": sentinel.result_stem, "TREE": "/testbed",
              "NESTED_FLAG": "RATCHET_SENTINEL_BENCH"}
    for name, value in values.items():
        if f"{name} = None" not in text:
            raise SystemExit(f"{plugin}: no {name!r} = None line to fill in; is it the plugin?")
        text = text.replace(f"{name} = None", f"{name} = {value!r}", 1)
    return text


def _script(runs: int, tests: str, module: str) -> str:
    """Alternating plain and sentinel runs; one ``<kind> <wall s> <cpu s>`` line per run (CPU:
    user + system time of the pytest process, less disturbed by a loaded machine)."""
    return "\n".join([
        "import os, resource, subprocess, time",
        f"plain = 'python3 -m pytest -q -p no:cacheprovider --junitxml={RESULTS}/j.xml {tests}'",
        f"env = dict(os.environ, PYTHONPATH={PLUGIN_DIR!r}, PYTEST_ADDOPTS='-p {module}')",
        "def cpu():",
        "    usage = resource.getrusage(resource.RUSAGE_CHILDREN)",
        "    return usage.ru_utime + usage.ru_stime",
        f"for _ in range({runs}):",
        "    for kind, extra in (('plain', None), ('sentinel', env)):",
        "        started, used = time.perf_counter(), cpu()",
        "        subprocess.run(plain.split(), cwd='/testbed', env=extra,",
        "                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)",
        "        print(kind, time.perf_counter() - started, cpu() - used, flush=True)", ""])


def measure(repo: str, runs: int, image: str, plugin: Path | None) -> dict:
    files = _files(repo, [0])
    tests = " ".join(sorted(p for p in files if p.startswith("tests/")))
    with tempfile.TemporaryDirectory() as tmp:
        tree, folder, results = Path(tmp, "tree"), Path(tmp, "plugin"), Path(tmp, "results")
        for rel, text in files.items():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
        folder.mkdir()
        results.mkdir(mode=0o777)
        results.chmod(0o777)
        sentinel = Sentinel.fresh(RESULTS, "/testbed", PLUGIN_DIR)
        (folder / f"{sentinel.module}.py").write_text(plugin_source(sentinel, plugin))
        done = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", "-v", f"{tree}:/testbed",
             "-v", f"{folder}:{PLUGIN_DIR}:ro", "-v", f"{results}:{RESULTS}", image,
             "python3", "-c", _script(runs, tests, sentinel.module)],
            capture_output=True, text=True, check=True)
        seconds: dict[str, list[float]] = {"plain": [], "sentinel": []}
        cpu: dict[str, list[float]] = {"plain": [], "sentinel": []}
        for line in done.stdout.splitlines():
            kind, wall, used = line.split()
            seconds[kind].append(float(wall))
            cpu[kind].append(float(used))
        verdicts = [json.loads(p.read_text()) for p in results.glob("*.json")]
    clean = bool(verdicts) and all(v.get("finished") and not v.get("findings") for v in verdicts)
    checks = {kind: sum((v.get("checks") or {}).get(kind, 0) for v in verdicts)
              for kind in ("full", "quick", "full_s", "quick_s")}
    count = sum(TEST_COUNTS[repo])
    got = {"repo": repo, "tests": count, "clean": clean, "checks": checks, "runs": seconds,
           "cpu_runs": cpu, "sentinel_runs": len(verdicts)}
    for name, samples in (("wall", seconds), ("cpu", cpu)):
        plain, watched = statistics.median(samples["plain"]), statistics.median(samples["sentinel"])
        got[name] = {"plain_s": plain, "sentinel_s": watched,
                     "per_test_ms": 1000 * (watched - plain) / count}
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind per repository")
    parser.add_argument("--repos", default=",".join(REPOS),
                        help=f"which repositories, comma-separated (of {', '.join(REPOS)})")
    parser.add_argument("--plugin", type=Path, default=None,
                        help="another sentinel_plugin.py to measure in place of this one")
    parser.add_argument("--image", default="ratchet-swe-base",
                        help="image with Python and pytest (the fixture's base image)")
    args = parser.parse_args()
    repos = [r for r in args.repos.split(",") if r.strip()]
    if not repos or set(repos) - set(REPOS):
        parser.error(f"--repos {args.repos!r}: name some of {', '.join(REPOS)}")
    for repo in repos:
        got = measure(repo, args.runs, args.image, args.plugin)
        wall, cpu, checks = got["wall"], got["cpu"], got["checks"]
        inside = (f"; its checks: {checks['full']} full, {1000 * checks['full_s'] / checks['full']:.1f}"
                  f" ms each, {checks['quick']} quick, "
                  f"{1000 * checks['quick_s'] / max(1, checks['quick']):.2f} ms each"
                  if checks["full"] else "")
        print(f"{repo} ({got['tests']} tests), medians of {args.runs}: wall plain "
              f"{wall['plain_s']:.2f}s, with the sentinel {wall['sentinel_s']:.2f}s "
              f"({wall['per_test_ms']:+.1f} ms per test); CPU plain {cpu['plain_s']:.2f}s, with "
              f"the sentinel {cpu['sentinel_s']:.2f}s ({cpu['per_test_ms']:+.1f} ms per test)"
              f"{inside}; results clean: {got['clean']}", flush=True)


if __name__ == "__main__":
    main()
