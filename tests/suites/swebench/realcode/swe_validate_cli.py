"""``ratchet swe validate`` run from a shell on a built set, as the real-project slow tests grade.

``validate(dataset, tmp_path, gold=None)`` runs it with the set's namespace, locks and gold
records in ``tmp_path`` (the gold records in ``gold`` when given, to share them with other
grades) and returns ``(exit status, stdout, stdout + stderr)``; ``remove_instance_images``
removes the instance images the grades built (the project image is the caller's to keep).
``built_set(spec, tmp_path, cache, count, max_candidates)`` builds a set with ``make_instances``
and yields ``(project, recipe, rows)``, its instance images removed on the way out;
``assert_all_valid(tmp_path, count)`` then grades it with ``validate``: every gold resolves and
no no-op does (the ``realcode_large`` tests' build-then-grade shape).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ratchet_ray.suites.swebench.realcode import resolve_project
from ratchet_ray.suites.swebench.realcode.build import Request, make_instances

RATCHET = str(Path(sys.executable).with_name("ratchet"))


def validate(dataset: Path, tmp_path: Path, gold: Path | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTEST_CURRENT_TEST")}
    done = subprocess.run(
        [RATCHET, "swe", "validate", "--dataset", str(dataset),
         "--out", str(tmp_path / "validate"), "--set", "swebench.namespace=null",
         "--set", f"swebench.lock_dir={tmp_path / 'locks'}",
         "--set", f"swebench.gold_records={gold or tmp_path / 'gold'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500)
    return done.returncode, done.stdout, done.stdout + done.stderr


def remove_instance_images(dataset: Path) -> None:
    for row in (json.loads(line) for line in dataset.open()):
        subprocess.run(["docker", "rmi", "-f", f"sweb.eval.x86_64.{row['instance_id'].lower()}"
                        ":latest"], capture_output=True)


@contextmanager
def built_set(spec: str, tmp_path: Path, cache: Path, count: int, max_candidates: int
              ) -> Iterator[tuple[Any, dict, list[dict]]]:
    project = resolve_project(spec)
    recipe = make_instances(Request(project=project, out=tmp_path / "set", cache=cache,
                                    count=count, max_candidates=max_candidates, jobs=2),
                            note=print)
    dataset = tmp_path / "set" / "instances.jsonl"
    try:
        yield project, recipe, [json.loads(line) for line in dataset.open()]
    finally:
        remove_instance_images(dataset)


def assert_all_valid(tmp_path: Path, count: int) -> None:
    code, stdout, text = validate(tmp_path / "set" / "instances.jsonl", tmp_path)
    assert code == 0, text[-4000:]
    assert f"{count}/{count} instances valid" in stdout, text[-4000:]
