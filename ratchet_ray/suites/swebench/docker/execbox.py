"""A started instance container and the commands run in it: timed, bounded, and cleaned up.

Contracts:
- ``InstanceContainer.run(command, timeout_s, user=...)`` runs ``bash -c command`` under
  ``timeout -s KILL`` as ``user`` (root, or the untrusted uid after ``become_untrusted``):
  ``CommandResult`` with stdout and stderr interleaved (``stdout`` alone too), the middle of
  output past ``settings.max_log_bytes`` cut. Processes left holding the output open are killed
  (``LINGER_S`` after the command exits: ``lingering``; past the limit: ``timed_out``), and
  everything once the writable layer passes ``settings.disk_mb`` (``disk_exceeded``) or a
  shorter ``host_limit_s`` passes (``timed_out``; a limit no process there sees). Only a
  daemon that stops answering even then raises ``InfraFailure("exec_hung")``.
- ``run_steps(steps, timeout_s)``: shell snippets in one exec (one daemon round trip), each in
  its own subshell whatever the previous one did, with its own ``StepResult``; ``$STEPS_DIR``
  (root-only, removed after) carries flags between steps. Output that does not read back whole
  raises ``InfraFailure("docker_error")`` (the steps ran: never run again). ``find_main_pid``
  is such an exec, its probes first (the keep-alive's pid, ``setpriv``, the OOM-kill count).
- ``put_files`` / ``read_folder``: many files in one archive each way (daemon round trips are
  what a loaded host serialises; docs/benchmarks.md, SWE-bench throughput).
"""

from __future__ import annotations

import io
import math
import re
import secrets
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Callable, Mapping, Sequence

from ratchet_ray.suites.swebench.docker.exec_stream import STDOUT, exec_frames
from ratchet_ray.suites.swebench.imports import docker_errors, serial_imports
from ratchet_ray.suites.swebench.docker.infra import InfraFailure, docker_failure, within
from ratchet_ray.suites.swebench.settings import SwebenchSettings

# Extra seconds the host waits for an exec beyond its in-container timeout, and again after it
# killed what was left running, before calling the daemon hung.
EXEC_GRACE_S = 30.0
# Seconds the output may stay open after the command itself exited (a background process holds
# it) before the leftovers are killed.
LINGER_S = 3.0
# How often the host looks at an exec and, every DISK_POLL_S, at the writable layer's size.
POLL_S = 0.5
DISK_POLL_S = 3.0
# Exit status of `timeout -s KILL` when the limit is hit (128 + SIGKILL).
KILLED_EXIT = 137


# The memory cgroup's OOM-kill counter: cgroup v1 (memory.oom_control) or v2 (memory.events).
OOM_PROBE = ("cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || "
             "cat /sys/fs/cgroup/memory.events 2>/dev/null || true")
_OOM_KILL = re.compile(r"^oom_kill (\d+)$", re.M)


def oom_kill_count(text: str) -> int | None:
    """The ``oom_kill N`` count in ``OOM_PROBE``'s output, or None when it has none."""
    m = _OOM_KILL.search(text)
    return int(m.group(1)) if m else None


@dataclass
class CommandResult:
    exit_code: int
    output: str
    timed_out: bool = False
    duration_s: float = 0.0
    lingering: bool = False
    """A process the command started kept its output open after it exited, and was killed."""
    disk_exceeded: bool = False
    """The writable layer grew past ``settings.disk_mb``; everything running was killed."""
    stdout: str = ""
    """The standard output alone, in the order it was written (``output`` interleaves stderr
    at the daemon's whim, even mid-line)."""


@dataclass
class StepResult:
    """One snippet of ``InstanceContainer.run_steps``: its exit status and its two streams."""
    exit_code: int
    stdout: str
    stderr: str


def container_workdir() -> str:
    with serial_imports:
        from swebench.image_builder.constants import CONTAINER_WORKDIR

    return CONTAINER_WORKDIR


def _clip_bytes(data: bytearray, limit: int) -> bytes:
    if len(data) <= limit:
        return bytes(data)
    half = limit // 2
    cut = len(data) - 2 * half
    return bytes(data[:half]) + f"\n...[{cut} bytes cut]...\n".encode() + bytes(data[-half:])


def _in_thread(fn: Callable[[], Any], seconds: float, what: str) -> Any:
    """``fn()`` in a daemon thread; ``InfraFailure("exec_hung")`` if it outlives ``seconds``."""
    try:
        done, value = within(fn, seconds, f"docker-{what}")
    except Exception as exc:  # noqa: BLE001 - every daemon error is an infrastructure one
        raise docker_failure(exc, f"{what} failed") from exc
    if not done:
        raise InfraFailure("exec_hung", f"the Docker daemon did not answer {what} within {seconds:.0f}s")
    return value


class InstanceContainer:
    """A started container for one instance; use through ``instance_container``."""

    def __init__(self, container: Any, settings: SwebenchSettings):
        self.container = container
        self.settings = settings
        self.workdir = container_workdir()
        self.user = "root"
        """Who ``run`` runs as by default; ``become_untrusted`` switches it."""
        self.main_pid: int | None = None
        """Pid of the keep-alive command (init's only child at start; ``kill_all`` spares it)."""
        self.setpriv = False
        """Whether the image can drop root inside a script (util-linux ``setpriv``), probed by
        ``find_main_pid``: the image's files outside the work tree do not change before the
        harness runs anything of the repository."""
        self.oom_kills_at_start: int | None = None
        """The memory cgroup's OOM-kill count when the container started (``find_main_pid``)."""
        self.first_results: list[StepResult] = []
        """The results of ``find_main_pid``'s ``then`` steps."""

    def find_main_pid(self, then: Sequence[str] = (), timeout_s: float = 60) -> None:
        """The module contract's first exec: ``then``'s results in ``first_results``. Nothing
        but init and the keep-alive runs yet, so ``/proc/1``'s only child is the keep-alive."""
        probes = ["cat /proc/1/task/1/children", "command -v setpriv >/dev/null", OOM_PROBE]
        results = self.run_steps([*probes, *then], timeout_s)
        children = results[0].stdout.split()
        self.main_pid = int(children[0]) if len(children) == 1 and children[0].isdigit() else None
        self.setpriv = results[1].exit_code == 0
        self.oom_kills_at_start = oom_kill_count(results[2].stdout)
        self.first_results = results[len(probes):]

    def oom_kills_since_start(self) -> int | None:
        """Processes the kernel's OOM killer ended in this container's memory cgroup since
        ``find_main_pid`` (None where the cgroup does not say), from its counter (``OOM_PROBE``),
        which nothing in the container can write."""
        if self.oom_kills_at_start is None:
            return None
        now = oom_kill_count(self.run(OOM_PROBE, 60, user="root").stdout)
        return None if now is None else now - self.oom_kills_at_start

    def run_steps(self, steps: Sequence[str], timeout_s: float) -> list[StepResult]:
        """Run ``steps`` as root in one exec (module contract); one ``StepResult`` per step."""
        if not steps:
            return []
        token = secrets.token_hex(16)  # unguessable: no step's output can fake a boundary
        lines = ['STEPS_DIR=$(mktemp -d) || exit 97', 'export STEPS_DIR']
        for i, step in enumerate(steps):
            lines.append(f'( {step or ":"}\n) >"$STEPS_DIR/{i}.o" 2>"$STEPS_DIR/{i}.e"; '
                         f'echo $? >"$STEPS_DIR/{i}.c"')
        lines.append(f'for i in {" ".join(str(i) for i in range(len(steps)))}; do '
                     f'printf "\\n{token} %s %s\\n" "$i" "$(cat "$STEPS_DIR/$i.c")"; '
                     f'cat "$STEPS_DIR/$i.o"; printf "\\n{token} stderr\\n"; '
                     f'cat "$STEPS_DIR/$i.e"; done; printf "\\n{token} end\\n"; '
                     f'rm -rf "$STEPS_DIR"')
        result = self.run("\n".join(lines), timeout_s, user="root")
        parsed = _parse_steps(result.stdout, token, len(steps))
        if parsed is None:
            raise InfraFailure("docker_error", f"container {self.name}: {len(steps)} batched "
                               f"step(s) did not report back whole (exit {result.exit_code}"
                               f"{', timed out' if result.timed_out else ''}): "
                               f"{result.output[-300:]}")
        return parsed

    @property
    def name(self) -> str:
        return self.container.name

    def untrusted_setup(self, *, whole_repo: bool, lockdown: str | None = None) -> str | None:
        """The root command ``become_untrusted`` runs, for a caller that batches it (None
        without an untrusted uid or ``setpriv``); ``lockdown``: a root step run right after the
        folders are handed over (the grader's policy, ``integrity.lockdown``)."""
        uid = self.settings.untrusted_uid
        if uid is None or not self.setpriv:
            return None
        # Grading keeps .git root-owned: the untrusted uid must not plant hooks or config.
        which = "-print0" if whole_repo else f"-path {self.workdir}/.git -prune -o -type d -print0"
        setup = (f"git config --system --add safe.directory '*' && "
                 f"mkdir -p /tmp/ratchet-home && chown {uid}:{uid} /tmp/ratchet-home && "
                 f"find {self.workdir} {which} | xargs -0 -r chown -h {uid}:{uid}")
        if whole_repo or not lockdown:  # an agent's box: the model edits every file in place
            return setup
        return f"{setup} && ( {lockdown} )"

    def become_untrusted(self, *, whole_repo: bool = True, done: StepResult | None = None) -> bool:
        """Hand the repository to ``settings.untrusted_uid`` and run later commands as that uid:
        every file with ``whole_repo`` (an agent edits in place), else the folders only (root's
        files stay unmodifiable, none is copied up). False, nothing changed, without
        ``setpriv``. ``done``: ``untrusted_setup``'s result when the caller ran it in a batch;
        a failed setup raises ``InfraFailure``."""
        setup = self.untrusted_setup(whole_repo=whole_repo)
        if setup is None:
            return False
        if done is None:
            result = self.run(setup, 600, user="root")
            code, output = result.exit_code, result.output
        else:
            code, output = done.exit_code, done.stdout + done.stderr
        if code != 0:
            raise InfraFailure("docker_error", f"container {self.name}: could not hand "
                               f"{self.workdir} to uid {self.settings.untrusted_uid}: "
                               f"{output[-500:]}")
        self.user = f"{self.settings.untrusted_uid}:{self.settings.untrusted_uid}"
        return True

    def run(self, command: str, timeout_s: float, *, workdir: str | None = None,
            user: str | None = None, host_limit_s: float | None = None) -> CommandResult:
        """Run ``command`` with bash under a hard in-container time limit (see module contract).
        ``host_limit_s``, when shorter, is a limit only the host enforces (it kills every
        process at it, ``timed_out``): one the container must not see, as ``timeout``'s
        argument is seen by every process there."""
        limit = max(1, math.ceil(timeout_s))
        argv = ["timeout", "-s", "KILL", str(limit), "/bin/bash", "-c", command]
        user = user or self.user
        env = ({"HOME": "/tmp/ratchet-home", "USER": "ratchet", "LOGNAME": "ratchet"}
               if user != "root" else None)
        api = self.container.client.api
        started = time.monotonic()
        state: dict[str, Any] = {"chunks": bytearray(), "stdout": bytearray(), "error": None}
        limit_bytes = self.settings.max_log_bytes

        def keep(key: str, data: bytes) -> None:
            buf = state[key]
            buf += data
            if len(buf) > 2 * limit_bytes:
                # Keep head and tail only; a runaway command must not exhaust memory.
                state[key] = bytearray(_clip_bytes(buf, limit_bytes))

        def pump() -> None:
            try:
                exec_id = api.exec_create(self.container.id, argv, workdir=workdir or self.workdir,
                                          user=user, environment=env)["Id"]
                state["exec_id"] = exec_id
                for stream, data in exec_frames(api, exec_id):
                    keep("chunks", data)
                    if stream == STDOUT:
                        keep("stdout", data)
            except Exception as exc:  # noqa: BLE001 - re-raised in the caller's thread below
                state["error"] = exc

        worker = threading.Thread(target=pump, name=f"exec-{self.name}", daemon=True)
        worker.start()
        hidden = None if host_limit_s is None or host_limit_s >= limit else max(0.0, host_limit_s)
        why = self._watch(worker, state, started, limit, hidden)
        duration = time.monotonic() - started
        if (exc := state["error"]) is not None:
            raise docker_failure(exc, f"container {self.name}: exec failed") from exc
        exit_code = self._inspect(state["exec_id"]).get("ExitCode")
        exit_code = -1 if exit_code is None else int(exit_code)
        output = _clip_bytes(state["chunks"], limit_bytes).decode(errors="replace")
        stdout = _clip_bytes(state["stdout"], limit_bytes).decode(errors="replace")
        timed_out = why == "timeout" or (exit_code == KILLED_EXIT and duration >= limit - 1)
        return CommandResult(exit_code, output, timed_out, duration, lingering=why == "lingering",
                             disk_exceeded=why == "disk", stdout=stdout)

    def _watch(self, worker: threading.Thread, state: dict[str, Any], started: float,
               limit: int, hidden: float | None = None) -> str | None:
        """Wait for the exec's output to close; kill what keeps it open, or everything at the
        ``hidden`` limit. Why it killed, or None."""
        killed_at: float | None = None
        why: str | None = None
        exited_at: float | None = None
        next_disk = started + DISK_POLL_S
        cutoff = limit + LINGER_S if hidden is None else hidden  # the host's own limit is sooner
        while True:
            worker.join(POLL_S)
            if not worker.is_alive():
                return why
            now = time.monotonic()
            if killed_at is not None:
                if now - killed_at > EXEC_GRACE_S:
                    raise InfraFailure("exec_hung", f"container {self.name}: the exec's output "
                                       f"stayed open {EXEC_GRACE_S:.0f}s after every process in "
                                       f"the container was killed")
                continue
            if now - started >= cutoff:
                why = "timeout"  # timeout(1) killed its group, something outside it holds on
            elif ("exec_id" in state and exited_at is None
                  and not self._inspect(state["exec_id"]).get("Running")):
                exited_at = now
            elif exited_at is not None and now - exited_at >= LINGER_S:
                why = "lingering"
            elif now >= next_disk:
                next_disk = now + DISK_POLL_S
                if self.writable_bytes() > self.settings.disk_mb * 2**20:
                    why = "disk"
            if why is not None:
                self.kill_all()
                killed_at = time.monotonic()

    def _inspect(self, exec_id: str) -> dict[str, Any]:
        """The daemon's view of an exec (``Running``, ``ExitCode``)."""
        return _in_thread(lambda: self.container.client.api.exec_inspect(exec_id), EXEC_GRACE_S,
                          f"inspecting an exec in {self.name}")

    def writable_bytes(self) -> int:
        """Size of the container's writable layer (what its processes wrote), in bytes."""
        api = self.container.client.api
        rows = _in_thread(lambda: api.containers(all=True, size=True,
                                                 filters={"id": self.container.id}),
                          EXEC_GRACE_S, f"sizing {self.name}")
        return int((rows[0] if rows else {}).get("SizeRw") or 0)

    def kill_all(self) -> None:
        """SIGKILL every process in the container but init (``docker --init``, which reaps them)
        and the keep-alive command; the shell doing it uses builtins only."""
        keep = self.main_pid or 1
        script = (f"for p in /proc/[0-9]*; do n=${{p#/proc/}}; case $n in 1|{keep}|$$) ;; "
                  f"*) kill -KILL $n 2>/dev/null ;; esac; done; true")
        _in_thread(lambda: self.container.exec_run(["/bin/sh", "-c", script], user="root"),
                   EXEC_GRACE_S, f"killing the processes in {self.name}")

    def write_file(self, path: str, content: str, mode: int = 0o644) -> None:
        """Put ``content`` at absolute ``path`` inside the container (see ``put_files``)."""
        self.put_files({path: (content, mode)})

    def put_files(self, files: Mapping[str, tuple[str | bytes, int]],
                  folders: Mapping[str, int] | None = None) -> None:
        """Put every ``{absolute path: (content, mode)}`` into the container in one archive (one
        round trip to the daemon): each file owned by root with its mode; ``folders`` (``{absolute
        path: mode}``, made first, root-owned) where a folder's mode matters, e.g. 0700 so that
        no other uid can even ``stat`` what is in it; other folders missing on the way are
        created by the daemon, root-owned, mode 0755."""
        buf = io.BytesIO()
        now = int(time.time())

        def entry(path: str) -> tarfile.TarInfo:
            target = PurePosixPath(path)
            if not target.is_absolute() or ".." in target.parts:
                raise ValueError(f"put_files needs absolute paths without '..', got {path!r}")
            info = tarfile.TarInfo(name=str(target.relative_to("/")))
            info.mtime, info.uid, info.gid = now, 0, 0  # the archive's owner is kept on extraction
            return info

        with tarfile.open(fileobj=buf, mode="w") as tar:
            for path, mode in sorted((folders or {}).items()):
                info = entry(path)
                info.type, info.mode = tarfile.DIRTYPE, mode
                tar.addfile(info)
            for path, (content, mode) in files.items():
                data = content.encode() if isinstance(content, str) else content
                info = entry(path)
                info.size, info.mode = len(data), mode
                tar.addfile(info, io.BytesIO(data))
        if not (files or folders):
            return
        if not _in_thread(lambda: self.container.put_archive("/", buf.getvalue()),
                          EXEC_GRACE_S, f"writing {len(files)} file(s) into {self.name}"):
            raise InfraFailure("docker_error", f"container {self.name}: could not write "
                               f"{', '.join(sorted(files)[:5])}")

    def read_folder(self, folder: str, limit_of: Callable[[str], int | None]
                    ) -> tuple[dict[str, bytes], dict[str, int]]:
        """The regular files directly in ``folder`` that ``limit_of(name)`` wants (a byte limit;
        None: skipped), in one round trip: ``({name: bytes}, {name: size}`` of those over their
        limit, not read``)``. An absent folder reads as empty. The archive is streamed, so what
        is skipped is never held in memory."""
        try:
            stream, _ = self.container.get_archive(folder)
        except docker_errors().NotFound:
            return {}, {}
        found: dict[str, bytes] = {}
        too_big: dict[str, int] = {}
        with tarfile.open(fileobj=_ChunkReader(stream), mode="r|") as tar:
            for member in tar:
                parts = PurePosixPath(member.name).parts
                if len(parts) != 2 or not member.isreg():
                    continue  # the folder itself, deeper entries, links
                limit = limit_of(parts[1])
                if limit is None:
                    continue
                if member.size > limit:
                    too_big[parts[1]] = member.size
                    continue
                found[parts[1]] = tar.extractfile(member).read()  # a regular file: never None
        return found, too_big


def _parse_steps(stdout: str, token: str, count: int) -> list[StepResult] | None:
    """``run_steps``'s output, or None when any step's section (or the end) is missing."""
    parts = re.split(rf"\n{token} ", stdout)
    if len(parts) != 2 * count + 2 or parts[-1].rstrip("\n") != "end":
        return None
    results = []
    for i in range(count):
        head, _, out = parts[1 + 2 * i].partition("\n")
        err_head, _, err = parts[2 + 2 * i].partition("\n")
        number, _, code = head.partition(" ")
        if number != str(i) or err_head != "stderr" or not code.strip().lstrip("-").isdigit():
            return None
        results.append(StepResult(int(code), out, err))
    return results


class _ChunkReader(io.RawIOBase):
    """A readable file over an iterator of byte chunks (Docker's archive stream)."""

    def __init__(self, chunks: Any):
        self._chunks = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n
