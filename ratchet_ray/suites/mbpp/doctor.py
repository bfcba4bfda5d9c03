"""The MBPP+ suite's checks for ``ratchet doctor`` and a run's preflight (its ``doctor``).

``environment_checks(config, preflight)`` never raises; it returns ``dataset (MBPP+)`` (not at
preflight: a grader's node need not hold the file), then ``sandbox`` (a FAIL when the sandbox
refuses to run generated code).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet_ray.llm.doctor import Check, timed
from ratchet_ray.suites.mbpp.dataset import dataset_file

DATASET_HINT = ("set MBPP_OVERRIDE_PATH=/path/MbppPlus-v0.2.0.jsonl.gz, or run once online: "
                "python -c 'from evalplus.data import get_mbpp_plus; get_mbpp_plus()'")


def check_dataset(dataset_path: str | None = None) -> str:
    """Where the MBPP+ problems will be read from; raises when there is no such file."""
    path = dataset_file(dataset_path)
    if path is not None:
        if not path.is_file():
            raise FileNotFoundError(f"MBPP+ dataset {path} does not exist")
        return str(path)
    from evalplus.data.utils import CACHE_DIR  # where evalplus itself looks

    cached = sorted(Path(CACHE_DIR).glob("MbppPlus*.jsonl"))
    if not cached:
        raise FileNotFoundError("no MBPP+ file in the evalplus cache and MBPP_OVERRIDE_PATH unset")
    return f"evalplus cache {cached[-1]}"


def check_sandbox() -> str:
    """The MBPP+ sandbox's isolation mode here; raises when it refuses to run generated code."""
    from ratchet_ray.suites.mbpp.sandbox import Sandbox

    sandbox = Sandbox()
    if sandbox.refusal:
        raise RuntimeError(f"sandbox refuses to run generated code: {sandbox.refusal}")
    return f"mode {sandbox.description}"


def environment_checks(config: Any, preflight: bool = False) -> list[Check]:
    """The suite's checks (module contract)."""
    checks = [] if preflight else [timed("dataset (MBPP+)", DATASET_HINT,
                                         lambda: check_dataset(config.dataset_path))]
    from ratchet_ray.suites.mbpp.sandbox import BWRAP_FIX

    return [*checks, timed("sandbox", BWRAP_FIX, check_sandbox)]
