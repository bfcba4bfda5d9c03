"""A restarted SkillBank or artifact service (Ray ``max_restarts``) keeps the run-dir guard of its
first start, so a run dir deleted while the run ran is not made again as a half run dir before
the driver's next check: the service's puts make folders only below it (``root=``), the bank
does not start again without it (its calls then raise ``RayActorError``).

Found by killing each actor (``ray.kill(no_restart=False)``) after ``rm -rf`` of its run dir: the
restarted actor read the guard off the disk again (``root`` is the run dir only where it exists),
found none, and its next write made the run dir again (``meta-skills/``, ``evidence/``,
``logs/``)."""

from __future__ import annotations

import os
import shutil
import sys
import time

import fakes
import pytest
import ray
import ray.cloudpickle
import skill_builders
from skill_builders import TOPICS, make_skill

from actors.artifacts import RemoteArtifacts, launch_artifact_service
from actors.skill_bank import launch_skill_bank
from ratchet_ray.settings.schema import LoopConfig

# Ray workers cannot import the tests folder by name; ship these modules by value.
ray.cloudpickle.register_pickle_by_value(fakes)
ray.cloudpickle.register_pickle_by_value(skill_builders)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _pid(actor) -> int:
    return os.getpid()


def _restarted(handle) -> None:
    """Kill the actor's process, letting Ray restart it; return once a new process answers or
    the restart has failed (the actor is dead)."""
    pid = ray.get(handle.__ray_call__.remote(_pid))
    ray.kill(handle, no_restart=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if ray.get(handle.__ray_call__.remote(_pid), timeout=30) != pid:
                return
        except ray.exceptions.ActorDiedError as exc:
            if "creation task" in str(exc):  # the restart's constructor raised
                return
        except ray.exceptions.RayActorError:
            pass  # the kill met the call; ask again
        time.sleep(0.2)
    raise AssertionError("the actor was neither restarted nor dead")


def test_a_restarted_skill_bank_does_not_make_a_deleted_run_dir_again(ray_local, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    bank = launch_skill_bank(run_dir, embedder=fakes.HashEmbedder, config=LoopConfig(),
                             run_id="guard1", num_cpus=0)
    ray.get(bank.ping.remote())
    shutil.rmtree(run_dir)
    _restarted(bank)
    with pytest.raises((FileNotFoundError, ray.exceptions.RayActorError)):
        ray.get(bank.ensure_default_metaskill.remote("sim", round_=1))
    with pytest.raises((FileNotFoundError, ray.exceptions.RayActorError)):
        ray.get(bank.add.remote(make_skill("s1", TOPICS[0]), round_=1))
    assert not run_dir.exists()
    ray.kill(bank, no_restart=True)


def test_a_restarted_artifact_service_does_not_make_a_deleted_run_dir_again(ray_local, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    service = launch_artifact_service(run_dir)
    artifacts = RemoteArtifacts(service, run_dir)
    artifacts.put("logs/a.log", b"a")
    shutil.rmtree(run_dir)
    _restarted(service)
    with pytest.raises(FileNotFoundError):
        artifacts.put("logs/b.log", b"b")
    assert not run_dir.exists()
    ray.kill(service, no_restart=True)
