"""SWE-bench leak sources: what a skill must not quote from an instance (``Suite.leak_sources``).

Per instance: its problem statement, every FAIL_TO_PASS / PASS_TO_PASS test id (and the test
function's own name as an identifier), and the changed lines of its test patch and of its gold
patch (the ``+`` / ``-`` lines of each hunk, file headers left out). The patches and the
FAIL_TO_PASS tests are ``answer`` sources: a skill must not carry them for train instances
either. The gold patch comes from the dataset itself (a ``Task`` never holds it).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ratchet_ray.suites.base import LeakSource
from ratchet_ray.suites.swebench.dataset import load_instances
from ratchet_ray.suites.swebench.settings import settings_from_config
from ratchet_ray.types import Task


def changed_lines(patch: str) -> list[str]:
    """The added and removed lines of a unified diff, without their +/- marker."""
    return [line[1:] for line in (patch or "").splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()]


def _test_function(test_id: str) -> str:
    """``test_bar`` of ``tests/test_x.py::TestX::test_bar[param]`` or ``test_bar (mod.Cls)``."""
    tail = test_id.split("::")[-1].split(" ")[0]
    return tail.split("[")[0]


def swebench_leak_sources(config: Any, tasks: Sequence[Task],
                          instances: Sequence[dict] | None = None) -> Iterable[LeakSource]:
    """The leak sources of ``tasks`` (module docstring); ``instances`` default to the config's
    dataset (``load_instances``)."""
    wanted = {t.task_id for t in tasks}
    rows = instances if instances is not None else load_instances(settings_from_config(config))
    for inst in rows:
        tid = inst["instance_id"]
        if tid not in wanted:
            continue
        yield LeakSource(tid, "problem_statement", inst.get("problem_statement", ""))
        for field, answer in (("FAIL_TO_PASS", True), ("PASS_TO_PASS", False)):
            for test_id in inst.get(field, []):
                yield LeakSource(tid, "test_name", test_id, answer=answer)
                yield LeakSource(tid, "test_name", _test_function(test_id), answer=answer,
                                 identifier=True)
        for line in changed_lines(inst.get("test_patch", "")):
            yield LeakSource(tid, "test_patch", line, answer=True)
        for line in changed_lines(inst.get("patch", "")):
            yield LeakSource(tid, "gold_patch", line, answer=True)
