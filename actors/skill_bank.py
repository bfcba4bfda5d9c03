"""The SkillBank as a Ray actor: one per run (arm), the only writer of skills/ and meta-skills/.

Contracts:
- ``launch_skill_bank(run_dir, embedder=..., config=..., run_id=..., **placement)`` returns the
  named actor ``skill_bank:<run_id>`` (an existing one is reused, so a restarted driver
  reattaches); the one place that sets its start options (``placement``: Ray resources and
  scheduling strategy). Its methods are ``SkillBank``'s.
- ``embedder`` may be an ``Embedder`` or a zero-argument factory (or class) returning one, so a
  heavy local model is built inside the actor instead of pickled from the driver.
- Calls run one at a time (the bank is a single writer). All state lives on disk, so a restarted
  actor (``max_restarts``) re-reads it; a call in flight when it died is not retried (an add
  must not be applied twice).
- A run dir that existed at launch (``guard``, a constructor argument, so Ray's restart gets it
  too) and is gone when the actor restarts is not made again: the restart fails
  (``FileNotFoundError``) and the bank's calls raise ``RayActorError``. A bank that starts keeps
  its writers' ``root=`` guard (``SkillBank``), which is read off the disk at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import ray

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.llm.base import Embedder
from ratchet_ray.storage.fsutil import run_dir_gone

EmbedderOrFactory = Embedder | Callable[[], Embedder] | None


class SkillBankProcess(SkillBank):
    """``SkillBank`` that may build its embedder in-process from a factory."""

    def __init__(self, run_dir: str | Path, *, embedder: EmbedderOrFactory, config: LoopConfig,
                 run_id: str, guard: bool = False):
        if guard and not Path(run_dir).is_dir():  # see module contracts: a restart's guard
            raise FileNotFoundError(run_dir_gone(run_dir, "the restarted SkillBank does not "
                                                          "start"))
        # A class also "has" name/embed, so it counts as a factory, like any non-Embedder callable.
        if embedder is not None and (isinstance(embedder, type) or not isinstance(embedder, Embedder)):
            embedder = embedder()
        super().__init__(run_dir, embedder=embedder, config=config, run_id=run_id)

    def ping(self) -> str:
        """Liveness probe; returns the run id."""
        return self.run_id


def actor_name(run_id: str) -> str:
    return f"skill_bank:{run_id}"


def launch_skill_bank(run_dir: str | Path, *, embedder: EmbedderOrFactory, config: LoopConfig,
                      run_id: str, **placement: Any) -> ray.actor.ActorHandle:
    """Start (or reattach to) the run's SkillBank actor; see module contracts."""
    return ray.remote(SkillBankProcess).options(
        name=actor_name(run_id), get_if_exists=True, max_concurrency=1, max_restarts=3,
        max_task_retries=0, **placement,
    ).remote(str(run_dir), embedder=embedder, config=config, run_id=run_id,
             guard=Path(run_dir).is_dir())
