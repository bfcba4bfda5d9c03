"""A real multi-node Ray cluster on this machine: one head and N worker nodes, each its own
``ray start --block`` process (its own process group), all bound to 127.0.0.1.

Contracts:
- ``LocalCluster(nodes, temp_root)`` starts nothing; ``start()`` starts the head (no CPUs: the
  driver's node, as on cluster.yaml) and then each ``NodeSpec`` as a worker node joining it,
  and returns once ``ray.nodes()`` (seen from a throwaway client) lists them all alive.
- Every node gets ports of its own (``own_port_flags`` and a worker-port range of its own):
  several raylets on one host would otherwise collide on the dashboard agent, metrics and
  object/node manager ports.
- ``head_only`` (a folder): every worker node runs in a mount namespace of its own where that
  folder is an empty read-only tmpfs, as if the head's disk were not shared, so a test can put
  the run dir there and see that no actor on a worker node reads or writes it.
- Every node has a cache folder of its own (``XDG_CACHE_HOME`` = ``cache_dir(name)``), as
  separate machines would: what one node's actors cache (MBPP+ expected outputs) another node
  does not see unless it travels through Ray. ``NodeSpec.env`` adds variables of the node's
  own (its processes and its workers see them).
- ``dashboard=True`` gives the head its dashboard (the Ray job server, for ``ray job submit``
  and ``JobSubmissionClient``) on a free loopback port.
- ``env`` is what a driver needs to join (``RAY_ADDRESS``, ``RAY_AUTH_MODE`` and loopback-only
  cluster mode), ``node_id(name)`` the Ray node id of a started node, ``kill(name)`` SIGKILLs
  that node's process group (its raylet and daemons: a node crash as Ray sees it; its actor
  workers, each in a process group of its own, die when they notice), ``stop()`` stops every
  node it started, even half-started ones, then SIGKILLs whatever of theirs is left, and
  removes its temp dir; nothing else on the machine is touched (no ``ray stop``, which would
  stop every Ray of this user). A node's processes are those whose environment carries its
  launch's ``NODE_MARK``: Ray starts each worker in a process group of its own, so the node's
  group misses them, and a worker whose raylet was killed can take over a minute on a loaded
  machine to notice.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ratchet_ray.sweep.ray_head import (ensure_auth_token, free_ports, own_port_flags,
                                        ray_executable)


class ClusterError(RuntimeError):
    """The local cluster could not start; the message quotes the node's log."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    num_cpus: float
    resources: dict[str, float] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    """Environment of this node's processes beyond the cluster's (e.g. a setting of its own)."""


NODE_MARK = "RATCHET_TEST_NODE"
"""Environment variable every process of a node inherits: unique per launch of a node."""


@dataclass
class _Node:
    spec: NodeSpec
    proc: subprocess.Popen
    log: Path
    mark: str


def marked(marks: set[str]) -> list[psutil.Process]:
    """The live processes whose environment has ``NODE_MARK`` in ``marks`` (one pass over the
    process table)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(NODE_MARK) in marks:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # gone, or not ours to read
    return found


def kill_marked(marks: set[str]) -> None:
    """SIGKILL every process ``marked(marks)`` finds and wait until none is alive."""
    procs = []
    for proc in marked(marks):
        try:
            proc.kill()
            procs.append(proc)
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(procs, timeout=30)


RAY_START_TIMED_OUT = "The current node timed out during startup"
"""What ``ray start`` raises when its raylet has not registered with the GCS within Ray's fixed
30 s (``ray._private.node``; no setting changes it), which a loaded 2-core machine can miss."""
START_RETRIES = 2


def _tail(path: Path, lines: int = 25) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) \
        if path.is_file() else "(no log)"


def _hide_from_node(folder: Path, argv: list[str]) -> list[str]:
    """``argv`` run in a private mount namespace where ``folder`` is an empty read-only tmpfs."""
    if shutil.which("unshare") is None:
        raise ClusterError("head_only needs `unshare` (util-linux) and root: apt-get install "
                           "util-linux")
    script = 'mount -t tmpfs -o ro,size=1m ratchet-head-only "$0" && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
            str(folder), *argv]


# The test cluster's nodes (tests/cluster/conftest.py). 3 logical CPUs per worker: either one
# alone can hold every actor of a round (the kill test).
NODES = [NodeSpec("head", 0), NodeSpec("dock", 3, {"docker": 2}), NodeSpec("cpu", 3)]


class LocalCluster:
    def __init__(self, nodes: list[NodeSpec], log_dir: Path, *, ready_timeout_s: float = 120.0,
                 dashboard: bool = False, head_only: Path | None = None):
        self.specs = nodes
        self.head_only = head_only
        self.dashboard = dashboard
        """The head runs its dashboard (the Ray job server) on a loopback port of its own."""
        self.log_dir = log_dir
        self.ready_timeout_s = ready_timeout_s
        self.nodes: dict[str, _Node] = {}
        (self.port,) = free_ports(1)
        # Ray's socket paths must stay short: a fresh folder directly under /tmp.
        self.temp = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))
        self.env = {**os.environ, "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "token"),
                    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
                    # as a local run's Ray (loop.runtime.LOCAL_RAY_SYSTEM_CONFIG): no idle
                    # workers started ahead that no actor of a run can use
                    "RAY_prestart_worker_first_driver": "0"}
        self.env.pop("RAY_ADDRESS", None)
        self._node_ids: dict[str, str] = {}
        self._worker_ports = 20000

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def driver_env(self) -> dict[str, str]:
        return {**self.env, "RAY_ADDRESS": self.address}

    def cache_dir(self, name: str) -> Path:
        """The cache folder of node ``name`` (its actors' ``XDG_CACHE_HOME``)."""
        return self.log_dir / "cache" / name

    def _launch(self, spec: NodeSpec, head: bool) -> None:
        log = self.log_dir / f"{spec.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        low, self._worker_ports = self._worker_ports, self._worker_ports + 200
        # A worker node joins through node_start.py, which keeps it on loopback (see there).
        launcher = [ray_executable()] if head else [
            str(Path(ray_executable()).parent / "python"), str(Path(__file__).with_name(
                "node_start.py"))]
        argv = [*launcher, "start", "--block", "--node-ip-address=127.0.0.1",
                "--disable-usage-stats", *own_port_flags(), f"--num-cpus={spec.num_cpus}",
                f"--min-worker-port={low}", f"--max-worker-port={low + 199}",
                f"--resources={json.dumps({'node_' + spec.name: 1, **spec.resources})}"]
        if head:
            dashboard = (["--include-dashboard=true", "--dashboard-host=127.0.0.1",
                          f"--dashboard-port={free_ports(1)[0]}"] if self.dashboard
                         else ["--include-dashboard=false"])
            argv += ["--head", f"--port={self.port}", *dashboard, f"--temp-dir={self.temp}"]
        else:
            argv += [f"--address={self.address}"]
            if self.head_only is not None:
                argv = _hide_from_node(self.head_only, argv)
        mark = f"{os.getpid()}-{spec.name}-{time.monotonic_ns()}"
        env = {**self.env, "XDG_CACHE_HOME": str(self.cache_dir(spec.name)), **spec.env,
               NODE_MARK: mark}
        with open(log, "a") as handle:
            proc = subprocess.Popen(argv, cwd=self.temp, env=env, stdout=handle,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes[spec.name] = _Node(spec, proc, log, mark)

    def query(self, body: str, *, check: bool = True) -> object:
        """Run ``body`` in a fresh driver joined to the cluster (``ray`` imported and connected,
        ``json`` imported; ``body`` sets ``result``) and return ``result`` as JSON gives it back.
        A fresh process, because a test process's own Ray keeps the auth mode it first saw."""
        code = ("import json, ray\nray.init(configure_logging=False, log_to_driver=False)\n"
                f"{body}\nprint('RESULT=' + json.dumps(result))\n")
        probe = subprocess.run([str(Path(ray_executable()).parent / "python"), "-c", code],
                               env=self.driver_env(), capture_output=True, text=True, timeout=180)
        lines = [line for line in probe.stdout.splitlines() if line.startswith("RESULT=")]
        if probe.returncode != 0 or not lines:
            if not check:
                return None
            raise ClusterError(f"a driver on the cluster failed ({probe.returncode}):\n"
                               f"{probe.stderr[-3000:]}")
        return json.loads(lines[-1][len("RESULT="):])

    def _alive_nodes(self) -> list[dict]:
        found = self.query("result = [{'id': n['NodeID'], 'res': n['Resources']} "
                           "for n in ray.nodes() if n['Alive']]", check=False)
        return found or []

    def actors(self) -> list[dict]:
        """Every actor the GCS knows (alive or dead): id, class, node id and state."""
        return self.query(
            "from ray._private import state\n"
            "result = [{'id': a['ActorID'], 'class': a['ActorClassName'], "
            "'node': a['Address']['NodeID'], 'state': a['State']} "
            "for a in state.actors().values()]")

    def _wait(self, names: list[str], gone: frozenset[str] = frozenset()) -> None:
        """Until each node of ``names`` has joined under an id not in ``gone`` (a restarted
        node's old id stays listed alive until the GCS notices its death), and no id of
        ``gone`` is still listed alive."""
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            for name in names:
                node = self.nodes[name]
                if node.proc.poll() is not None:
                    raise ClusterError(f"node {name} exited with {node.proc.returncode}; "
                                       f"{node.log} ends with:\n{_tail(node.log)}")
            alive = self._alive_nodes()
            for found in alive:
                for name in names:
                    if found["res"].get(f"node_{name}") and found["id"] not in gone:
                        self._node_ids[name] = found["id"]
            if (all(name in self._node_ids for name in names)
                    and not gone & {found["id"] for found in alive}):
                return
            if time.monotonic() > deadline:
                missing = [n for n in names if n not in self._node_ids]
                raise ClusterError(f"nodes {missing} did not join within "
                                   f"{self.ready_timeout_s:.0f}s; logs under {self.log_dir}")
            time.sleep(1.0)

    def start(self) -> "LocalCluster":
        try:
            ensure_auth_token(self.env)  # a fresh machine has none; `ray start` never makes one
            head, *workers = self.specs
            self._start_node(head, head=True)
            for spec in workers:  # one at a time: two raylets starting at once on 2 cores
                self._start_node(spec, head=False)  # can miss Ray's 30 s registration bound
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, spec: NodeSpec, head: bool, gone: frozenset[str] = frozenset()) -> None:
        """Launch ``spec`` and wait until it has joined. A ``ray start`` that exited because its
        raylet missed Ray's fixed registration bound (``RAY_START_TIMED_OUT``) is cleared away
        (``kill``: the raylet and agents it left) and launched again, at most ``START_RETRIES``
        times; any other failure is raised at once."""
        for attempt in range(START_RETRIES + 1):
            self._launch(spec, head=head)
            try:
                self._wait([spec.name], gone=gone)
                return
            except ClusterError:
                node = self.nodes[spec.name]
                if (attempt == START_RETRIES or node.proc.poll() is None
                        or RAY_START_TIMED_OUT not in _tail(node.log, 3)):
                    raise
                self.kill(spec.name)
                # A raylet that registered after its `ray start` gave up is listed alive until
                # the GCS notices the kill: the relaunched node must not be taken for it.
                self._node_ids.pop(spec.name, None)
                gone = gone | {found["id"] for found in self._alive_nodes()
                               if found["res"].get(f"node_{spec.name}")}

    def node_id(self, name: str) -> str:
        return self._node_ids[name]

    def kill(self, name: str) -> None:
        """SIGKILL the node's raylet, its workers and everything else it started (its actors
        too: Ray gives each actor worker a process group of its own): a crash of the machine."""
        node = self.nodes[name]
        try:
            os.killpg(node.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        kill_marked({node.mark})
        node.proc.wait(timeout=30)

    def processes(self, name: str) -> list[psutil.Process]:
        """The live processes of node ``name`` (its launch's mark in their environment)."""
        return marked({self.nodes[name].mark})

    def restart(self, name: str) -> None:
        """Start worker node ``name`` again after ``kill``, and wait until the cluster lists the
        new node alive and the killed one dead: later tests of the module see the same nodes."""
        old = self._node_ids.pop(name, None)
        self._start_node(self.nodes[name].spec, head=False, gone=frozenset({old} if old else ()))

    def stop(self) -> None:
        # Workers first, the head last (its GCS must outlive the raylets' goodbyes).
        for name in reversed(list(self.nodes)):
            proc = self.nodes[name].proc
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name in reversed(list(self.nodes)):
            proc = self.nodes[name].proc
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            try:  # whatever the node started and left behind
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
        kill_marked({node.mark for node in self.nodes.values()})  # their own groups, missed above
        shutil.rmtree(self.temp, ignore_errors=True)
