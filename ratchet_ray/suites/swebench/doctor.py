"""Environment checks for the SWE-bench suite (``ratchet doctor --suite swebench``).

Contract: ``check_environment(settings, instance_ids=(), min_free_gb=50.0)`` never raises; it
returns one ``Check(name, ok, detail)`` per probe: the daemon answers, free disk under the
daemon's data root, leftover suite containers, and (for the given instances) whether their images
are present locally or will be pulled / built on first use.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Sequence

from ratchet_ray.suites.swebench.container import docker_client, leftover_containers
from ratchet_ray.suites.swebench.images import image_name
from ratchet_ray.suites.swebench.infra import InfraFailure
from ratchet_ray.suites.swebench.settings import SwebenchSettings


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


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
        free_gb = shutil.disk_usage(root).free / 1e9
        checks.append(Check("free disk", free_gb >= min_free_gb,
                            f"{free_gb:.1f} GB free under {root} (want >= {min_free_gb:g} GB; "
                            f"lower swebench.cache_level to keep fewer images)"))
    except OSError as exc:
        checks.append(Check("free disk", True, f"cannot stat {root} from here ({exc}); remote daemon?"))
    left = leftover_containers(client)
    checks.append(Check("leftover containers", not left,
                        f"{len(left)} left: {', '.join(left[:5])} (remove with docker rm -f)"
                        if left else "none"))
    if instance_ids:
        present = {tag for image in client.images.list() for tag in image.tags}
        missing = [i for i in instance_ids if image_name(i, settings) not in present]
        how = ("pulled from namespace " + repr(settings.namespace) if settings.namespace
               else "built locally from each instance's dockerfile")
        checks.append(Check("instance images", True,
                            f"{len(instance_ids) - len(missing)}/{len(instance_ids)} present; "
                            f"missing ones are {how} on first use"))
    return checks
