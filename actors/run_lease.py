"""A run's lease: the driver holds it, and the run's detached actors leave when it is gone.

Why: the per-node model servers and the run's rate limiters are detached (a non-detached named
actor would die with whichever task created it); a SIGKILLed driver cannot release them, and
its servers would hold a model copy per node until someone resumes the run.

Contracts:
- ``hold_run_lease(run_id)`` starts the non-detached named actor ``ratchet-lease-<run id>``
  (namespace ``ratchet``) owned by the calling driver, so Ray ends it with that driver; the
  caller keeps the handle for the run's lifetime.
- ``watch_run_lease(scope)``, inside a detached actor, does nothing when no lease of that scope
  exists (a shared scope, a client built outside a run); otherwise a daemon thread checks every
  ``interval_s`` and kills the actor once the lease was missing ``misses`` times in a row. A
  ``--resume`` that retakes the lease in time keeps the servers, and reuses them.
"""

from __future__ import annotations

import logging
import re
import threading
import time

import ray

from actors.named_client import NAMESPACE

CHECK_INTERVAL_S = 5.0
MISSES_BEFORE_EXIT = 2

log = logging.getLogger(__name__)


@ray.remote(num_cpus=0)
class RunLease:
    """Exists while the driver that owns it lives; ``ping`` returns the run id."""

    def __init__(self, run_id: str):
        self.run_id = run_id

    def ping(self) -> str:
        return self.run_id


def scope_token(scope: str) -> str:
    """``scope`` as it appears in actor names (no '-': it separates the name's parts)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", scope)


def lease_name(scope: str) -> str:
    return f"ratchet-lease-{scope_token(scope)}"


def hold_run_lease(run_id: str):
    """Take run ``run_id``'s lease for the calling driver (see module contracts); the handle
    must be kept as long as the run goes on."""
    handle = RunLease.options(name=lease_name(run_id), namespace=NAMESPACE,
                              get_if_exists=True).remote(run_id)
    ray.get(handle.ping.remote())
    return handle


def lease_held(scope: str) -> bool:
    try:
        ray.get_actor(lease_name(scope), namespace=NAMESPACE)
    except ValueError:
        return False
    return True


def watch_run_lease(scope: str, *, interval_s: float = CHECK_INTERVAL_S,
                    misses: int = MISSES_BEFORE_EXIT) -> bool:
    """Start watching ``scope``'s lease from the calling actor; returns whether a watch started
    (False: no lease of that scope exists, so the actor is not run-owned)."""
    if not lease_held(scope):
        return False
    me = ray.get_runtime_context().current_actor

    def watch() -> None:
        missing = 0
        while True:
            time.sleep(interval_s)
            missing = 0 if lease_held(scope) else missing + 1
            if missing >= misses:
                log.warning("the driver of run %s is gone (its lease ended); this actor exits",
                            scope)
                ray.kill(me, no_restart=True)
                return

    threading.Thread(target=watch, name=f"lease-watch-{scope}", daemon=True).start()
    return True
