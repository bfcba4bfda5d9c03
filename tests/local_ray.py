"""The local Ray runtime a test process shares: started once, bound to 127.0.0.1.

``start_local_ray()`` starts it unless one is already up (a run's own driver may have stopped an
earlier one: ``run_loop`` without a runtime starts and stops its own), and returns ``ray``. The
``ray_local`` fixture and the module fixtures that run whole loops use it, so every test of a
process sees the same settings whichever starts it first. It has no job ``runtime_env``: Ray
starts every worker of a job that has one through a setup process of its own (another
interpreter importing Ray, about 1 s of CPU per actor); Ray's processes inherit this process's
environment instead (``HF_HUB_OFFLINE``, set by ``tests/conftest.py``)."""

from __future__ import annotations


def start_local_ray():
    import ray

    from ratchet_ray.loop.runtime import LOCAL_RAY_SYSTEM_CONFIG

    if not ray.is_initialized():
        # `docker`: this machine, as a local run's Ray offers it (SWE-bench actors ask for it).
        ray.init(num_cpus=4, resources={"docker": 4}, _node_ip_address="127.0.0.1",
                 include_dashboard=False, configure_logging=False, log_to_driver=False,
                 _system_config=LOCAL_RAY_SYSTEM_CONFIG)
    return ray
