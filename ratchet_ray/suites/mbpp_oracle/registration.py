"""The ``mbpp_oracle`` suite's registration (imported by ``suites.registry``, as a plugin would
be): its section and ``configure`` rule, MBPP+'s doctor checks, offline tasks and the ``sim``
suite's truth columns of a sweep report (one truth report reads both worlds).
"""

from __future__ import annotations

from typing import Any

from ratchet_ray.settings.resources import configs_dir
from ratchet_ray.suites.mbpp.registration import (DATASET_VAR, SANDBOX_FIX, TASK_ID_PATTERN,
                                                  configure_mbpp)
from ratchet_ray.suites.mbpp.settings import MOVED_KEYS, SECTION, MbppSettings
from ratchet_ray.suites.mbpp_oracle.settings import OracleSettings, OracleWorld
from ratchet_ray.suites.registry import BUILTIN_ORIGIN, register

NAME = "mbpp_oracle"


def configure_oracle(config: Any, settings: OracleSettings) -> None:
    """A LoopConfig of this suite needs the ``sim`` backend, takes ``$MBPP_OVERRIDE_PATH`` as
    ``mbpp`` does, grades with the ``mbpp`` section (stored complete) and derives ``llm.world``
    from its section, seed and dataset at every resolve."""
    if config.llm.backend != "sim":
        raise ValueError(f"suite {NAME!r} with llm.backend {config.llm.backend!r}: its models "
                         "are the simulated world's, so it needs llm.backend sim; use "
                         f"configs/{NAME}.yaml (layered automatically by jobs.skill_loop)")
    configure_mbpp(config, settings)
    # Its grader is MBPP+'s: the mbpp section, stored complete (read on the driver, as for mbpp).
    grading = MbppSettings.model_validate(config.suite_settings.get(SECTION) or {})
    if config.suite_settings.get(SECTION) != grading.model_dump(mode="json"):
        config.suite_settings = {**config.suite_settings, SECTION: grading.model_dump(mode="json")}
    world = OracleWorld.of_run(settings, config.seed, config.dataset_path)
    if config.llm.world != world:
        config.llm.world = world


register(NAME, "ratchet_ray.suites.mbpp_oracle:MbppOracleSuite", settings=OracleSettings,
         configure=configure_oracle, origin=BUILTIN_ORIGIN,
         metaskill=configs_dir() / "meta_skills" / "default_sim.md",
         doctor="ratchet_ray.suites.mbpp.doctor:environment_checks", offline_tasks=True,
         sweep_report="ratchet_ray.suites.sim.registration:sweep_truth",
         env_vars=(DATASET_VAR,), fix_hints=(SANDBOX_FIX,), task_id_pattern=TASK_ID_PATTERN,
         moved_keys=MOVED_KEYS)
