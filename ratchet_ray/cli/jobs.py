"""``ratchet baseline``, ``ratchet select-subset`` and ``ratchet ablations``: the commands that
``python -m jobs.baseline`` / ``jobs.select_subset`` / ``jobs.ablations`` run as Ray jobs, under
the ``ratchet`` group with the same options and behaviour.

Imports point one way: ``jobs/`` (thin entry points) imports ``ratchet_ray.cli``, never the
reverse (``tests/architecture/test_layers.py``).
"""

from __future__ import annotations

import copy

from ratchet_ray.cli.ablations import main as _ablations
from ratchet_ray.cli.baseline import main as baseline
from ratchet_ray.cli.select_subset import main as select_subset

ablations = copy.copy(_ablations)  # a renamed copy: the job's own command keeps its name
ablations.name = "ablations"

COMMANDS = [baseline, select_subset, ablations]
