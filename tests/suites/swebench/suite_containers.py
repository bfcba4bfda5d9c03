"""What the SWE-bench tests check after a run: that none of the suite's containers is left.

``leftover_containers(client)``: the names of every container labelled as this suite's
(``docker.container.LABEL_KEY``) that still exists, live runs' included; docker-py's listing
skips one removed while it is being listed (another grader reaping it).
"""

from __future__ import annotations

from typing import Any

from ratchet_ray.suites.swebench.docker.container import LABEL_KEY


def leftover_containers(client: Any) -> list[str]:
    return [c.name for c in client.containers.list(all=True, filters={"label": LABEL_KEY},
                                                   ignore_removed=True)]
