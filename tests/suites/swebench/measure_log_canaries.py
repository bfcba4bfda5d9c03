"""Canaries of ``log_canaries`` planted in a real Django or sympy source tree and run by its own
runner, as a SWE-bench grade would plant them. Per test module (django) or group of files
(sympy): the tests the unplanted run passes are the graded ones (one as FAIL_TO_PASS), then the
planted run must keep every one of them passing, fail every canary (``problem`` None) and show no
overridden failure; the planted log with each failing line rewritten as a pass, the forgery
code under test could do, must come to ``test_tampering``. Prints one line per module.

Run (the trees are source distributions, whose ``tests/`` and test files come with them):
    pip download django==4.2.16 --no-binary :all: --no-deps  # then unpack, and in a venv:
    pip install -e Django-4.2.16
    .venv/bin/python tests/suites/swebench/measure_log_canaries.py django Django-4.2.16 \\
        --python venv/bin/python basic.tests utils_tests.test_text ...
    .venv/bin/python tests/suites/swebench/measure_log_canaries.py sympy sympy-1.12 \\
        --python venv/bin/python sympy/core/tests/test_basic.py a.py,b.py ...
(``--python``: the interpreter that has that tree's dependencies; mpmath for sympy.)
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
from pathlib import Path

from ratchet_ray.suites.swebench import log_canaries

# sympy's bin/test, which is not in its source distribution
SYMPY_TEST = ("import sys; sys.path.insert(0, '.'); from sympy.testing.runtests import test; "
              "sys.exit(not test(*sys.argv[1:], verbose=True))")
DJANGO_OPTIONS = ["--verbosity", "2", "--settings=test_sqlite", "--parallel", "1"]
FORGE = {"unittest": [(r" \.\.\. (FAIL|ERROR)$", " ... ok"), (r"^(FAIL|ERROR): .*$", "")],
         "sympy": [(r"^(test_\w+) [FE]\b", r"\1 ok"), (r"^_+ \S+\.py:\w+ _+$", "")]}


def _parse(runner: str, log: str) -> dict[str, str]:
    from swebench.harness.log_parsers import PARSER_REGISTRY

    return PARSER_REGISTRY["parse_log_django" if runner == "unittest" else "parse_log_sympy"](log, None)


def _run(runner: str, root: Path, python: str, target: str) -> tuple[str, list[str], list[str]]:
    """``(log, the command's words as an eval script would write them, the files it runs)``."""
    if runner == "unittest":
        argv = [python, "tests/runtests.py", *DJANGO_OPTIONS, target]
        words = ["./tests/runtests.py", *DJANGO_OPTIONS, target]
        files = ["tests/" + target.replace(".", "/") + ".py"]
    else:
        files = target.split(",")
        argv, words = [python, "-c", SYMPY_TEST, *files], ["bin/test", "-C", "--verbose", *files]
    run = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=1800)
    return run.stdout + run.stderr, words, files


def measure(runner: str, root: Path, python: str, target: str, seed: int) -> str:
    log, words, files = _run(runner, root, python, target)
    passing = [n for n, s in _parse(runner, log).items() if s == "PASSED"
               and (runner == "sympy" or log_canaries.unittest_name(n))]
    rng = random.Random(seed)
    rng.shuffle(passing)
    instance = {"FAIL_TO_PASS": passing[:1], "PASS_TO_PASS": passing[1:]}
    texts = {f: (root / f).read_text() for f in files}
    graded = log_canaries.graded_files(instance, words, runner)
    plan = log_canaries.plan(runner, {f: (texts[f], graded[f]) for f in graded}, rng)
    if plan is None:
        return f"{target}: no canary planted"
    try:
        for planted in plan.files:
            (root / planted.path).write_text(planted.planted)
        log, _, _ = _run(runner, root, python, target)
    finally:
        for path, text in texts.items():
            (root / path).write_text(text)
    statuses = _parse(runner, log)
    lost = [n for n in passing if statuses.get(n) != "PASSED"]
    forged = log
    for pattern, replacement in FORGE[runner]:
        forged = re.sub(pattern, replacement, forged, flags=re.M)
    caught = plan.problem(_parse(runner, forged))
    kinds = ",".join(sorted(t.kind.split(" ")[0] for t in plan.tests))
    return (f"{target}: {len(passing)} graded, canaries [{kinds}], graded lost {len(lost)} "
            f"{lost[:3]}, problem {plan.problem(statuses)}, overridden "
            f"{log_canaries.contradictions(runner, log, statuses)}, forged -> {caught and caught[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", choices=["django", "sympy"])
    parser.add_argument("root", type=Path, help="the unpacked source tree")
    parser.add_argument("targets", nargs="+", help="django test modules, or sympy test files "
                        "(comma-separated for one command)")
    parser.add_argument("--python", default="python3")
    args = parser.parse_args()
    runner = "unittest" if args.project == "django" else "sympy"
    marker = args.root / ("tests/runtests.py" if runner == "unittest" else "sympy/testing/runtests.py")
    if not marker.is_file():
        parser.error(f"{args.root} is not an unpacked {args.project} source tree ({marker} is "
                     f"missing): unpack the sdist that `pip download {args.project} --no-binary "
                     f":all: --no-deps` fetches and pass its folder")
    for seed, target in enumerate(args.targets):
        print(measure(runner, args.root.resolve(), args.python, target, seed), flush=True)


if __name__ == "__main__":
    main()
