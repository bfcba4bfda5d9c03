"""The ``mbpp`` suite's registration (imported by ``suites.registry``, as a plugin would be):
offline tasks (``$MBPP_OVERRIDE_PATH`` is a run's default ``dataset_path``, ``configure_mbpp``),
its section ``settings.MbppSettings`` (with the ``grader.*`` keys it once was, ``MOVED_KEYS``).
"""

from __future__ import annotations

import os
from typing import Any

from ratchet_ray.suites.contract import EnvVar, FixHint
from ratchet_ray.suites.mbpp.settings import MOVED_KEYS, MbppSettings
from ratchet_ray.suites.registry import BUILTIN_ORIGIN, register

NAME = "mbpp"
DATASET_VAR = EnvVar("MBPP_OVERRIDE_PATH", "An MBPP+ file (`MbppPlus-v0.2.0.jsonl.gz`) read "
                     "instead of evalplus's download: the default `dataset_path` of the `mbpp` "
                     "and `mbpp_oracle` suites", config_key="dataset_path",
                     forward=True)
ENV_VARS = (DATASET_VAR,
            EnvVar("EVALPLUS_TIMEOUT_PER_TASK", "evalplus's cap on one test split's process "
                   "(the default of `mbpp.evalplus_timeout_per_task_s`, read on the driver)",
                   config_key="mbpp.evalplus_timeout_per_task_s"))
SANDBOX_FIX = FixHint(("sandbox",), "the MBPP+ sandbox cannot run code here; see `ratchet "
                                    "doctor` (sandbox) for the mode and its fix")
TASK_ID_PATTERN = r"Mbpp/\d+"
OPERATIONAL_KEYS = {"evalplus_timeout_per_task_s": "the cap on one test split's process"}
"""What ``--resume`` takes edited (the sandbox and a test's time limits decide a grade)."""


def configure_mbpp(config: Any, settings: Any) -> None:
    """A LoopConfig of suite mbpp that names no ``dataset_path`` takes ``$MBPP_OVERRIDE_PATH``
    (None when unset or empty: evalplus's download)."""
    if "dataset_path" not in config.model_fields_set:
        config.dataset_path = os.environ.get("MBPP_OVERRIDE_PATH") or None


register(NAME, "ratchet_ray.suites.mbpp:MbppSuite", origin=BUILTIN_ORIGIN,
         configure=configure_mbpp, doctor="ratchet_ray.suites.mbpp.doctor:environment_checks",
         offline_tasks=True, impossible_twin="ratchet_ray.suites.mbpp.twin:impossible_twin",
         env_vars=ENV_VARS, fix_hints=(SANDBOX_FIX,), task_id_pattern=TASK_ID_PATTERN,
         settings=MbppSettings, moved_keys=MOVED_KEYS, operational_keys=OPERATIONAL_KEYS)
