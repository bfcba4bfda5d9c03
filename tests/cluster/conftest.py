"""Fixtures of the multi-node tests: one real local cluster for each module.

Nodes (names are also custom resources ``node_<name>``, so each node can be told apart):
- ``head``: no CPUs, the driver's node (runs the SkillBank and the run-dir services);
- ``dock``: 3 CPUs and ``docker: 2`` (the node type SWE-bench graders and solvers need);
- ``cpu``: 3 CPUs only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import ray.cloudpickle

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import loop_helpers  # noqa: E402
from local_cluster import NODES, LocalCluster  # noqa: E402

ray.cloudpickle.register_pickle_by_value(loop_helpers)



@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A started ``LocalCluster`` (head, dock, cpu) for the module's tests. Tests talk to it from
    driver processes of their own (``LocalCluster.query``, ``round_driver.py``, ``jobs.ablations
    --address``), as ``ray job submit`` would; the head runs its dashboard (the Ray job server).
    ``cluster.head_only`` is a folder only the head and its drivers see (the worker nodes see an
    empty read-only one): a run dir there is on the head's disk alone. Per module, not per
    session: an idle cluster of three nodes costs about 11 % of a core, more than a start saves
    when the session goes on for minutes after its last user."""
    local = LocalCluster(NODES, tmp_path_factory.mktemp("cluster_logs"), dashboard=True,
                         head_only=tmp_path_factory.mktemp("head_only"))
    local.start()
    try:
        yield local
    finally:
        local.stop()
