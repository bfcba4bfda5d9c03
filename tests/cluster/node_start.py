"""``ray start`` for a worker node that joins a loopback-only head on this machine.

    python tests/cluster/node_start.py start --address=127.0.0.1:PORT --node-ip-address=127.0.0.1 ...

Ray 2.60 allows a worker node only with cluster mode on (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``),
and cluster mode rewrites every loopback address (the head's, the node's own) to the host's
routable one. This launcher turns cluster mode on for the join check of this one process and
keeps every address on loopback; the processes the node starts run with cluster mode off, like
every other Ray of the tests (see tests/conftest.py).
"""

from __future__ import annotations

import os
import sys

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # inherited by the node's processes

from ray._private import ray_constants, services  # noqa: E402

ray_constants.ENABLE_RAY_CLUSTER = True  # the worker-node check of `ray start`, here only
services.resolve_ip_for_localhost = lambda host: host
services.get_node_ip_address = lambda address=None: "127.0.0.1"

from ray.scripts.scripts import main  # noqa: E402

if __name__ == "__main__":
    sys.argv = ["ray", *sys.argv[1:]]
    main()
