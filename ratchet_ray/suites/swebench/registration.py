"""The ``swebench`` suite's registration, imported by ``suites.registry`` as a plugin module
would be: its settings, doctor checks, the Critic's patch review, the ``ratchet swe`` commands,
and its ``Cluster`` extension (the ``docker`` resource of its Graders and Solvers, the gold-patch
validation before round 0, placement on a node holding the instance's image, and each round's
per-node image-cache report).
"""

from __future__ import annotations

import os

from ratchet_ray.suites.contract import Cluster, EnvVar, FixHint
from ratchet_ray.suites.registry import BUILTIN_ORIGIN, register
from ratchet_ray.suites.swebench.docker.infra import START_DOCKER
from ratchet_ray.suites.swebench.settings import MOVED_KEYS, SwebenchSettings, adopt_old_keys

NAME = "swebench"
# cluster.yaml's docker_worker nodes offer `docker`, one SWE-bench harness per unit; a local Ray
# started by ``loop.runtime.connect_ray`` is this machine, whose Docker daemon the preflight
# checks: it offers one unit per CPU.
DOCKER = {"docker": 1}
LOCAL_DOCKER_SLOTS = max(1, os.cpu_count() or 1)
DOCKER_FIX = FixHint(("docker", "containerd"), f"{START_DOCKER}, check DOCKER_HOST / "
                     f"swebench.docker_host, then `ratchet doctor --suite {NAME}`")
ENV_VARS = (EnvVar("DOCKER_HOST", "The Docker daemon SWE-bench's containers run on when "
                   "`swebench.docker_host` is unset (Docker's own variable)"),)
TASK_ID_PATTERN = r"[\w.-]+__[\w.-]+-\d+"
"""SWE-bench instance ids: ``<owner>__<repo>-<number>``."""
_LIMIT = "a container's resource limit"
OPERATIONAL_KEYS = {
    "memory_mb": _LIMIT, "cpus": _LIMIT, "pids_limit": _LIMIT, "disk_mb": _LIMIT,
    "grade_command_timeout_s": "how long a grade's Docker command may take",
    "instance_deadline_s": "how long a whole grade may take",
    "cache_level": "which images stay on disk after an instance",
    "docker_host": "which Docker daemon runs the containers",
    "build_network": "the network local image builds download through",
    "lock_dir": "where a node's image locks and cache index live",
    "image_cache_gb": "the disk a node's image cache may use",
    "build_min_free_gb": "the disk a node's image cache may use",
    "validate_gold": "a check before round 0, not what a round measures",
}
"""What ``--resume`` takes edited; every other key (the tasks, their images, the Solver's
limits, how a grade is proved and parsed) changes what the rounds measure."""


CLUSTER = Cluster(resources={"grader": DOCKER, "solver": DOCKER},
                  local_resources={"docker": LOCAL_DOCKER_SLOTS},
                  node_types={"docker": "docker_worker"},
                  before_rounds="ratchet_ray.suites.swebench.validate:before_rounds",
                  placement="ratchet_ray.suites.swebench.docker.placement:placement",
                  round_report="ratchet_ray.loop.swebench_nodes:round_report")


register(NAME, "ratchet_ray.suites.swebench:SwebenchSuite", settings=SwebenchSettings,
         configure=adopt_old_keys, moved_keys=MOVED_KEYS, critic="patch", origin=BUILTIN_ORIGIN,
         doctor="ratchet_ray.suites.swebench.doctor:environment_checks", fix_hints=(DOCKER_FIX,),
         env_vars=ENV_VARS, task_id_pattern=TASK_ID_PATTERN,
         commands="ratchet_ray.cli.swebench:COMMANDS",
         impossible_twin="ratchet_ray.suites.swebench.proof.twin:impossible_twin",
         operational_keys=OPERATIONAL_KEYS, cluster=CLUSTER)
