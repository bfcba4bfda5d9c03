"""Settings of the ``mbpp_oracle`` suite and the world handle its LLM backend receives
(``llm.world``): the ``sim`` world's knobs (``SimSettings``, same meaning) over every MBPP+
problem of the dataset instead of ``n_tasks`` drawn ones, plus how the Solver answers.
Imports only the ``sim`` suite's settings module, itself a leaf.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from ratchet_ray.suites.sim.settings import SimSettings, SimWorld


class OracleSettings(SimSettings):
    """The world over MBPP+ (``SimSettings`` but ``n_tasks``) and the oracle Solver's answers."""

    n_tasks: int = 0
    """Unused and must stay 0: the world's tasks are the dataset's MBPP+ problems; a run picks
    its train and eval tasks with ``n_train``/``n_eval`` or ``subset``, as an ``mbpp`` run."""
    default_world: ClassVar[str] = "legacy"
    """The oracle world keeps the sim world from before its calibration (issue 40) unless
    ``mbpp_oracle.world: calibrated`` is given."""
    variants: int = Field(default=3, ge=1, le=10)
    """Broken variants per task (single mutations of its canonical solution, ``mutate.py``) the
    oracle Solver picks from when the world draws a failure."""

    @field_validator("n_tasks")
    @classmethod
    def _no_task_count(cls, value: int) -> int:
        if value != 0:
            raise ValueError("mbpp_oracle.n_tasks: the world's tasks are the MBPP+ problems of "
                             "the dataset; choose a run's tasks with n_train/n_eval or subset")
        return value


class OracleWorld(OracleSettings, SimWorld):
    """What the backend needs to rebuild the world: the settings, the run seed and the MBPP+
    file (None: ``$MBPP_OVERRIDE_PATH``, else evalplus's cached download)."""

    dataset_path: str | None = None
    backend_module: ClassVar[str] = "ratchet_ray.suites.mbpp_oracle.backend"

    @classmethod
    def of_run(cls, settings: OracleSettings, seed: int,
               dataset_path: str | None) -> "OracleWorld":
        """The world of a run: its ``mbpp_oracle`` settings, its seed and its dataset."""
        return cls(seed=seed, dataset_path=dataset_path, **settings.model_dump())
