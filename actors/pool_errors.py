"""What a ``ResilientPool`` raises when it cannot work at all, and how an actor's death is read.

Contract of ``describe_death(err)``: a dead worker named for a person (class, pid, actor name,
the signal and llama.cpp function its Ray ``.err`` log names when that log is on this machine,
Ray's exit type and detail, the log's path) and the fix for that cause (never an install hint);
``failure_text`` is that as one line; ``ActorDied`` raises it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError

from ratchet_ray.llm.crash import Diagnosed, crash_signal, crashing_function, last_line
from ratchet_ray.storage.fsutil import read_tail


class PoolError(RuntimeError):
    """A pool cannot do its work at all (as opposed to one job failing)."""


class ActorStartError(PoolError):
    """An actor's constructor raised; ``cause`` is the constructor's own exception."""

    def __init__(self, pool: str, cause: BaseException, detail: str):
        super().__init__(f"pool {pool!r}: an actor cannot start: {detail}")
        self.pool, self.cause = pool, cause


class ActorStartTimeout(PoolError):
    """Actors were not started within the bound; the message names what they ask for."""


def who_offers(resources: dict[str, Any]) -> str:
    """`` (resource 'docker' is offered by cluster.yaml node type 'docker_worker')`` for each
    custom resource in ``resources`` the suites name a node type for (``Cluster.node_types``;
    tests/cluster checks them against cluster.yaml), so a run stuck waiting names the node to
    add; "" when none."""
    from ratchet_ray.suites.hooks import cluster_node_types

    offering = cluster_node_types()
    named = [f"resource {name!r} is offered by cluster.yaml node type "
             f"{offering[name]!r} (give it min_workers >= 1, or let the autoscaler "
             f"add one)" for name in sorted(resources) if name in offering]
    return f" ({'; '.join(named)})" if named else ""


def not_started_text(pool: str, count: int, timeout_s: float, resources: dict[str, Any]) -> str:
    """Why ``count`` actors of ``pool``, each asking for ``resources``, did not start within
    ``timeout_s``: what they ask for, what the cluster has and has free, and the fix."""
    asked = resources or {"(default)": "1 CPU"}
    have = {k: v for k, v in sorted(ray.cluster_resources().items())
            if not k.startswith(("node:", "memory", "object_store_memory"))}
    # Ray leaves a resource fully in use out of what is available: it is 0 free, not unknown.
    available = ray.available_resources()
    free = {k: round(available.get(k, 0.0), 2) for k in have}
    missing = {name for name in resources.get("resources", {}) if not have.get(name)}
    return (f"pool {pool!r}: {count} actor(s) did not start within {timeout_s:.0f}s; each asks "
            f"for {asked}, the cluster has {have} ({free} free). Add a node that offers these "
            f"resources{who_offers({name: 1 for name in missing})}, or lower the pool's size "
            f"(workers.*) or its resources")


def init_failure(err: BaseException) -> BaseException | None:
    """The constructor's exception when ``err`` says the actor died in its creation task, else
    None. Ray reports it either as the creation task's own ``RayTaskError`` (what a call on such
    an actor raises) or as a ``RayActorError`` flagged ``actor_init_failed``."""
    if isinstance(err, RayTaskError):
        if not str(getattr(err, "function_name", "")).endswith("__init__"):
            return None  # an exception of a method: the job's outcome, not a start-up failure
        return err.cause if isinstance(err.cause, BaseException) else err
    if not isinstance(err, RayActorError) or not getattr(err, "actor_init_failed", False):
        return None
    # Ray keeps the creation task's error as the ActorDiedError's first argument.
    cause = next((a for a in getattr(err, "args", ()) if isinstance(a, RayTaskError)), None)
    if isinstance(cause, RayTaskError):
        cause = cause.cause if isinstance(cause.cause, BaseException) else cause
    return cause if isinstance(cause, BaseException) else err


def init_failure_text(err: BaseException, cause: BaseException) -> str:
    """``Type: message`` of the constructor's exception (the last line Ray's text ends with when
    the original exception object did not survive the trip)."""
    if cause is not err:
        return f"{type(cause).__name__}: {cause}"[:2000]
    return last_line(str(err), type(err).__name__, 2000)


def raise_if_init_failed(pool: str, err: BaseException) -> None:
    """``ActorStartError`` when ``err`` says an actor of ``pool`` died in its constructor."""
    cause = init_failure(err)
    if cause is not None:
        raise ActorStartError(pool, cause, init_failure_text(err, cause)) from cause


@dataclass
class LostAttempt:
    """One job's run that died with its actor (its work, and any LLM spend, is lost)."""

    method: str
    item: Any
    key: Any
    attempt: int
    error: str


class ActorDied(PoolError, Diagnosed):
    """An actor's worker process died; ``detail`` and ``hint`` as ``describe_death`` gives them."""

    def __init__(self, detail: str, hint: str):
        super().__init__(f"{detail} (fix: {hint})")
        self.detail, self.hint = detail, hint

    @classmethod
    def from_error(cls, err: BaseException) -> "ActorDied":
        return cls(*describe_death(err))


def _field(text: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name}: (\S+)\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


def ray_logs_dir() -> Path | None:
    """This machine's logs folder of the Ray session this process is connected to, or None."""
    try:
        import ray._private.worker as ray_worker

        node = ray_worker._global_node
        return Path(node.get_logs_dir_path()) if node is not None else None
    except (ImportError, AttributeError, OSError):  # not connected, or another Ray layout
        return None


def worker_log(pid: int) -> Path | None:
    """The ``.err`` log of the Ray worker with ``pid`` (``worker-<id>-<job>-<pid>.err``), when it
    is on this machine."""
    folder = ray_logs_dir()
    if folder is None:
        return None
    found = sorted(folder.glob(f"worker-*-{pid}.err"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def describe_death(err: BaseException) -> tuple[str, str]:
    """``(detail, hint)`` of an actor's death (module contracts)."""
    cause = init_failure(err)
    if cause is not None:
        return (f"an actor's constructor raised {init_failure_text(err, cause)}",
                "fix what the constructor's error names")
    text = str(err)
    who = (_field(text, "class_name") or "an actor").rsplit(".", 1)[-1]  # no "f.<locals>."
    pid, name, ip = _field(text, "pid"), _field(text, "name"), _field(text, "ip")
    ids = ", ".join(part for part in (pid and f"pid {pid}", name) if part)
    exit_match = re.search(r"Worker exit type: (\S+) Worker exit detail: (.*?)(?:\. Some common "
                           r"causes|\n|$)", text, re.DOTALL)
    ray_says = (f"{exit_match.group(1)}: {exit_match.group(2).strip()}" if exit_match
                else last_line(text, "no detail")).rstrip(". ")
    log = worker_log(int(pid)) if pid else None
    signame = function = None
    if log is not None:
        tail = read_tail(log, 256 * 1024)
        signame, function = crash_signal(tail), crashing_function(tail)
    how = (f": {signame} in {function}" if signame and function else
           f": {signame}" if signame else "")
    where = (f"its log: {log}" if log is not None else
             f"its log: worker-*-{pid}.err in the Ray session's logs folder of node {ip}"
             if pid else "see the Ray worker logs")
    detail = f"actor {who}{f' ({ids})' if ids else ''} died{how}; Ray: {ray_says}; {where}"
    return detail[:2000], _death_hint(signame, function, ray_says)


def failure_text(err: BaseException) -> str:
    """A dead actor (``RayActorError``, not a constructor's exception) as ``describe_death``
    names it, with its type and fix; any other error as ``str(err)``."""
    if isinstance(err, RayActorError) and init_failure(err) is None:
        detail, hint = describe_death(err)
        return f"{type(err).__name__}: {detail} (fix: {hint})"
    return str(err)


def _death_hint(signame: str | None, function: str | None, ray_says: str) -> str:
    if function is not None:
        return ("llama.cpp crashed in that process: `ratchet doctor --llm local` names the fix "
                "(llm.local.extra_buffer_types=false, or a llama-cpp-python built for a generic "
                "CPU)")
    if "out_of_memory" in ray_says.lower() or "low on memory" in ray_says.lower():
        return "the node ran out of memory: lower workers.* or give the node more memory"
    if signame is not None:
        return f"a native crash ({signame}) in that process: read the log named above"
    return "Ray's reason above says why; the worker's log holds its last words"
