"""Environment checks for the SWE-bench suite (``ratchet doctor --suite swebench`` and a run's
preflight, on a node with the grader's resources).

Contracts:
- ``check_environment(settings, instance_ids=(), min_free_gb=50.0)`` never raises; one
  ``llm.doctor.Check`` per probe (no hint yet): the daemon answers; free disk under its data root; this
  node's image cache (FAIL when the disk guard would refuse a build now); leftover containers
  (FAIL only for those of dead owners on this host, named with the command that removes them;
  live runs' are only counted); and whether the given instances' images are present or will be
  pulled / built on first use.
- ``environment_checks(config, preflight)`` (the suite's ``doctor``) never raises: a local
  dataset file read first (so the images can be looked up), ``check_environment`` with fix
  hints, mini-swe-agent's package and templates when it is the solver, then git. ``WARNINGS``
  only warn at a run's preflight; the dataset, the daemon and git stop it.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Sequence

from ratchet_ray.llm import doctor
from ratchet_ray.llm.doctor import Check
from ratchet_ray.suites.swebench.docker.container import docker_client, orphaned_containers
from ratchet_ray.suites.swebench.docker.image_cache import format_report, node_report
from ratchet_ray.suites.swebench.docker.images import image_name
from ratchet_ray.suites.swebench.docker.infra import START_DOCKER, InfraFailure
from ratchet_ray.suites.swebench.settings import SwebenchSettings, settings_from_config


def check_environment(settings: SwebenchSettings, instance_ids: Sequence[str] = (),
                      min_free_gb: float = 50.0) -> list[Check]:
    try:
        client = docker_client(settings)
    except InfraFailure as exc:
        return [Check("docker daemon", False, str(exc))]
    info = client.info()
    checks = [Check("docker daemon", True, f"server {info.get('ServerVersion')}, storage "
                                           f"{info.get('Driver')}, {info.get('NCPU')} CPUs")]
    root = info.get("DockerRootDir") or "/var/lib/docker"
    try:
        free_gb: float | None = shutil.disk_usage(root).free / 1e9
        checks.append(Check("free disk", free_gb >= min_free_gb,
                            f"{free_gb:.1f} GB free under {root} (want >= {min_free_gb:g} GB; "
                            f"lower swebench.cache_level to keep fewer images)"))
    except OSError as exc:
        free_gb = None
        checks.append(Check("free disk", True, f"cannot stat {root} from here ({exc}); remote daemon?"))
    checks.append(_leftover_check(client))
    checks.append(_image_cache_check(settings, root, free_gb))
    if instance_ids:
        present = {tag for image in client.images.list() for tag in image.tags}
        missing = [i for i in instance_ids if image_name(i, settings) not in present]
        how = ("pulled from namespace " + repr(settings.namespace) if settings.namespace
               else "built locally from each instance's dockerfile")
        checks.append(Check("instance images", True,
                            f"{len(instance_ids) - len(missing)}/{len(instance_ids)} present; "
                            f"missing ones are {how} on first use"))
    return checks


def _leftover_check(client: Any) -> Check:
    """FAIL for containers whose owner on this host died; those of live runs are only counted:
    the fix shown must never remove a container another run is grading in right now."""
    orphaned, others = orphaned_containers(client)
    in_use = f"; {others} of live runs or other hosts, left alone" if others else ""
    if not orphaned:
        return Check("leftover containers", True, f"none left by dead processes{in_use}")
    shown = " ".join(orphaned[:20]) + (" ..." if len(orphaned) > 20 else "")
    return Check("leftover containers", False,
                 f"{len(orphaned)} left by dead processes: docker rm -f {shown}{in_use}")


def _image_cache_check(settings: SwebenchSettings, root: str, free_gb: float | None) -> Check:
    """This node's image cache (counters, use against the budget); a FAIL when the disk guard
    would refuse the next build already (``free_gb`` under ``root``: None when unknown)."""
    report = format_report(node_report(settings))
    if free_gb is not None and free_gb < settings.build_min_free_gb:
        return Check("image cache", False, f"{report}; {free_gb:.1f} GB free under {root} is "
                     f"below swebench.build_min_free_gb={settings.build_min_free_gb:g}: builds "
                     f"and pulls will be refused")
    return Check("image cache", True, report)


# Checks whose failure a run's preflight only warns about (the others stop it): the run can
# go on, and the fix can wait (``llm.doctor.Check.blocking``).
WARNINGS = ("free disk", "leftover containers", "image cache", "instance images")
# Fix hints of the environment checks, by check name.
HINTS = {
    "docker daemon": f"{START_DOCKER} and check DOCKER_HOST or swebench.docker_host / "
                     "permissions on /var/run/docker.sock",
    "free disk": "free space under the Docker data root (docker image prune) or lower "
                 "swebench.cache_level so fewer instance images are kept",
    "image cache": "free disk under Docker's data root, set swebench.image_cache_gb so the "
                   "least recently used instance images go first, or lower "
                   "swebench.build_min_free_gb",
    "leftover containers": "a killed run left them: the next SWE-bench grader to start on this "
                           "host reaps them, or run the docker rm -f shown (it names only "
                           "containers whose owner process is gone)",
}


def _check_git() -> str:
    path = shutil.which("git")
    if not path:
        raise FileNotFoundError("git not on PATH")
    return path


def environment_checks(config: Any, preflight: bool = False) -> list[Check]:
    """The suite's checks for ``ratchet doctor`` and the preflight (module contracts)."""
    from ratchet_ray.suites.swebench.dataset import load_instances

    settings = settings_from_config(config)
    checks: list[Check] = []
    ids: list[str] = []

    def read_dataset() -> str:
        ids.extend(i["instance_id"] for i in load_instances(settings))
        return f"{len(ids)} instances in {settings.dataset_name}"

    if Path(settings.dataset_name).expanduser().is_file():
        checks.append(doctor.timed("dataset (SWE-bench)", "give dataset_path a JSON, JSONL or "
                                   "Parquet file of SWE-bench instances", read_dataset))
    started = time.perf_counter()
    try:
        found = check_environment(settings, ids)
    except Exception as exc:  # a doctor reports every failure as a FAIL line instead of crashing
        found = [Check("docker daemon", False, f"{type(exc).__name__}: {exc}"[:300])]
    seconds = (time.perf_counter() - started) / max(1, len(found))
    checks += [Check(c.name, c.ok, c.detail, "" if c.ok else HINTS.get(c.name, ""), seconds,
                     blocking=c.name not in WARNINGS) for c in found]
    if settings.solver == "mini-swe-agent":
        checks.append(doctor.timed("solver (mini-swe-agent)", "pip install 'ratchet-ray[swebench]'",
                                   _check_mini_swe_agent))
    return [*checks, doctor.timed("git", "apt-get install git", _check_git)]


def _check_mini_swe_agent() -> str:
    from importlib.metadata import version

    from ratchet_ray.suites.swebench.agent.mini_swe import CONFIG_FILE, reference_config

    reference_config()  # the package imports and its SWE-bench templates load
    return f"mini-swe-agent {version('mini-swe-agent')} with its {CONFIG_FILE}"
