"""A skill-loop driver process for the chaos suite (the suite SIGKILLs it, fills its disk...).

    python tests/chaos/chaos_driver.py CONFIG_YAML        # a new run
    python tests/chaos/chaos_driver.py --resume RUN_DIR   # continue one

Joins the Ray cluster at ``RAY_ADDRESS`` and prints the run dir on the first line of stdout.
Faults, from the environment:
- ``CHAOS_DISK_FULL_AFTER=N``: the disk "fills" after N evidence parts: every later part write
  gets half its bytes out, then ``OSError(ENOSPC)`` (the real writer's error path runs).
- ``CHAOS_LLM_URL=URL``: the LLM is the real OpenAI-compatible client against URL (the chaos
  server) instead of the scripted double.
- ``CHAOS_LLM_FROM_CONFIG=1``: the LLM is the production client of the config's ``llm`` section
  (``Models.filled``: the run's rate limiter actor included); the embedder stays the double.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]

import ray.cloudpickle  # noqa: E402

import fakes  # noqa: E402
import loop_helpers  # noqa: E402
from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence import store as store_module  # noqa: E402
from ratchet_ray.loop.driver import run_loop  # noqa: E402

ray.cloudpickle.register_pickle_by_value(fakes)
ray.cloudpickle.register_pickle_by_value(loop_helpers)


def fill_disk_after(allowed: int) -> None:
    real = store_module.atomic_write_with
    state = {"left": allowed}

    def writer(path, write, *, replace=True, root=None):
        if state["left"] > 0:
            state["left"] -= 1
            return real(path, write, replace=replace, root=root)

        def half_then_full(handle):
            handle.write(b"PAR1" + b"\0" * 64)  # some bytes land, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device (chaos)", str(path))

        return real(path, half_then_full, replace=replace, root=root)

    store_module.atomic_write_with = writer


def models():
    url = os.environ.get("CHAOS_LLM_URL")
    scripted = loop_helpers.scenario_models()
    if os.environ.get("CHAOS_LLM_FROM_CONFIG"):
        from ratchet_ray.loop.runtime import Models

        return Models(embedder=scripted.embedder)
    if not url:
        return scripted
    from ratchet_ray.llm.openai_compat import OpenAICompatLLM, OpenAIConfig
    from ratchet_ray.loop.runtime import Models

    client = OpenAICompatLLM(OpenAIConfig(base_url=url, model="scripted", max_retries=8,
                                          timeout_s=60))
    return Models(llm=client, embedder=scripted.embedder)


if __name__ == "__main__":
    if os.environ.get("CHAOS_DISK_FULL_AFTER"):
        fill_disk_after(int(os.environ["CHAOS_DISK_FULL_AFTER"]))
    announce = lambda path: print(path, flush=True)  # noqa: E731
    if sys.argv[1] == "--resume":
        run_loop(None, resume=Path(sys.argv[2]), models=models(), show_progress=False,
                 announce=announce)
    else:
        run_loop(load_config([sys.argv[1]]), models=models(), show_progress=False,
                 announce=announce)
