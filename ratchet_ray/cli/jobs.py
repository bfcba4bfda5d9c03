"""``ratchet baseline``, ``ratchet select-subset`` and ``ratchet ablations``: the jobs of ``jobs/``
as subcommands, with the same options and behaviour.

``python -m jobs.baseline`` / ``jobs.select_subset`` / ``jobs.ablations`` stay the entry points
for ``ray job submit``; these are the same click commands under the ``ratchet`` group.
"""

from __future__ import annotations

import copy

# The jobs must not import ``ratchet_ray.cli`` (its __init__ imports this module, which imports
# them back); they take shared helpers from ``ratchet_ray.loop`` (e.g. ``loop.flags``).

from jobs.ablations import main as _ablations
from jobs.baseline import main as baseline
from jobs.select_subset import main as select_subset

ablations = copy.copy(_ablations)  # a renamed copy: the job's own command keeps its name
ablations.name = "ablations"

COMMANDS = [baseline, select_subset, ablations]
