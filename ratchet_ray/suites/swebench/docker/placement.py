"""Where SWE-bench work runs best: on the node that holds the instance's image (the suite's
``placement`` hook; the pools' side is ``actors.placement``). Plain library: no Ray here.

Contracts:
- ``placement(config, role)``: an ``ImagePlacement`` for the Solver and Grader pools, else None.
- ``ImagePlacement.key(method, item)``: the image name of a job whose item is a task, else None.
- ``ImagePlacement.held_here()``, run on a node: the images its image-cache index lists (what
  the node's workers built, pulled or found ready and kept, not what a Docker daemon shared by
  several nodes holds); unreadable: none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ratchet_ray.suites.swebench.docker.image_cache import held_images
from ratchet_ray.suites.swebench.settings import SwebenchSettings, settings_from_config

ROLES = ("solver", "grader")


@dataclass
class ImagePlacement:
    """Place each instance's job on a node whose index lists its image (module contract)."""

    settings: SwebenchSettings
    _names: dict[str, str] = field(default_factory=dict, repr=False)

    def key(self, method: str, item: Any) -> str | None:
        task_id = getattr(item, "task_id", None)
        if method not in ("run", "grade") or not isinstance(task_id, str):
            return None
        if task_id not in self._names:
            from ratchet_ray.suites.swebench.docker.images import image_name

            self._names[task_id] = image_name(task_id, self.settings)
        return self._names[task_id]

    def held_here(self) -> list[str]:
        return held_images(self.settings)

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings, "_names": {}}  # a node needs no name memo


def placement(config: Any, role: str) -> ImagePlacement | None:
    """The ``placement`` hook (module contract)."""
    return ImagePlacement(settings_from_config(config)) if role in ROLES else None
