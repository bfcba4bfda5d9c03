"""A run's detached actors (model servers, rate limiters) leave when its driver is SIGKILLed,
stay while a resumed driver holds the lease again, and are never tied to a lease that does not
exist (a scope several runs share). Real Ray, a real second driver process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from actors.rate_limiter import NAMESPACE, SharedLimiter, limiter_name
from actors.run_lease import hold_run_lease, lease_held, watch_run_lease
from waiting import actor_gone, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _named(ray, name: str) -> bool:
    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    return True


def test_sigkilled_driver_takes_its_limiter_along_but_not_a_shared_one(ray_local):
    ray = ray_local
    address = ray.get_runtime_context().gcs_address
    driver = textwrap.dedent(f"""
        import sys, time, ray
        sys.path.insert(0, {ROOT!r})
        ray.init(address={address!r}, _node_ip_address="127.0.0.1", log_to_driver=False)
        from actors.run_lease import hold_run_lease
        from actors.rate_limiter import SharedLimiter
        lease = hold_run_lease("leased_run")
        SharedLimiter("k", 600, 0, scope="leased_run").limits()  # the run's detached limiter
        print("ready", flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    shared = SharedLimiter("k", 600, 0, scope="shared_by_runs")
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert shared.limits() == (600, 0)
        run_limiter = limiter_name("k", 600, 0, "leased_run")
        assert _named(ray, run_limiter) and lease_held("leased_run")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        wait_for(lambda: not lease_held("leased_run"), 30,
                 "Ray to end a SIGKILLed driver's lease")
        wait_for(lambda: not _named(ray, run_limiter), 30,
                 "the run's limiter to leave with its SIGKILLed driver")
        assert _named(ray, limiter_name("k", 600, 0, "shared_by_runs"))
    finally:
        if proc.poll() is None:
            proc.kill()
        ray.kill(ray.get_actor(limiter_name("k", 600, 0, "shared_by_runs"), namespace=NAMESPACE))


def test_a_lease_taken_again_in_time_keeps_the_actors(ray_local):
    ray = ray_local

    @ray.remote(num_cpus=0)
    class Watched:
        """Watches ``scope``'s lease and counts the watch's checks (``checks``)."""

        def __init__(self, scope: str):
            from actors import run_lease

            held, self.count = run_lease.lease_held, 0

            def counted(name: str) -> bool:  # the watch thread looks the function up per check
                self.count += 1
                return held(name)

            run_lease.lease_held = counted  # this actor's process only
            self.watching = watch_run_lease(scope, interval_s=0.3, misses=6)

        def watching_lease(self) -> bool:
            return self.watching

        def checks(self) -> int:
            return self.count

    unowned = Watched.remote("nobody_holds_this")
    assert ray.get(unowned.watching_lease.remote()) is False

    lease = hold_run_lease("resumed_run")
    watched = Watched.remote("resumed_run")
    assert ray.get(watched.watching_lease.remote()) is True
    ray.kill(lease)  # the first driver is gone ...
    wait_for(lambda: not lease_held("resumed_run"), 10, "the killed lease to end")
    lease = hold_run_lease("resumed_run")  # ... and a --resume takes the lease within one check
    taken_at = ray.get(watched.checks.remote())
    # Ten checks after that, more than the six misses it would take to leave; a watch that
    # missed the new lease has killed the actor by then, and this call fails.
    wait_for(lambda: ray.get(watched.checks.remote(), timeout=10) >= taken_at + 10, 30,
             "ten lease checks after the lease was taken again")
    assert ray.get(watched.watching_lease.remote(), timeout=10) is True

    ray.kill(lease)  # now the run is really over: the watched actor leaves by itself
    wait_for(lambda: actor_gone(watched), 20, "the watched actor to leave once its lease ended")
    assert ray.get(unowned.watching_lease.remote()) is False  # no lease, no watch, still here
    ray.kill(unowned)
