"""The sandboxed side of one MBPP+ grade: run the solution on the inputs, send back its outputs.

Started by ``sandbox.Sandbox`` as ``python -I -S -B runner.py RESULT_FD`` (inside bubblewrap in
the strong mode); standard library only, plus ``wire.py`` next to it and, when the grader names
it, evalplus's ``eval/utils.py`` (by file location, so the solution runs under evalplus's own
``reliability_guard``/``swallow_io``/``time_limit``). It never sees the expected outputs and
decides nothing.

Protocol: the job (a pickle from the grader: code, entry point, the splits' inputs and per-test
limits, rlimits) arrives on stdin. Frames go to RESULT_FD, each a 4-byte big-endian length and a
JSON object: ``{"k": "start"}`` first, once the trusted set-up is done (job read, evalplus
loaded, limits applied) and before the code is compiled or run, so the solution can neither hold
it back nor write before it: the grader files every failure after it (a hang, a crash, a killed
runner, a closed or garbled channel) as the code's, any before it as infrastructure. Then
``{"k": "syntax", "name", "msg"}`` once if the code does not compile; per split
``{"k": "ready", "split"}`` after the module ran, ``{"k": "out", "split", "i", "v", "h"}`` per
test (``v``: ``wire.encode``'s text, null when too big for the wire; ``h``: the sha256 of its
pickle) or ``{"k": "exc", "split", "i", "stage", "name", "msg"}`` at the first test that raised
(the split stops, like evalplus's fast check), and ``{"k": "exit", "split", "signal"}`` once the
split's process is gone. Each split runs in its own ``os.fork``ed process (no multiprocessing,
so no start method can skip a step); between splits every other process of the sandbox is
killed. The solution's output is swallowed; stdout/stderr carry nothing the grader trusts.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import pickle
import resource
import signal
import sys
from pathlib import Path

_here = Path(__file__).resolve().parent


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wire = _load("ratchet_wire", str(_here / "wire.py"))
_write, _dumps, _exit = os.write, json.dumps, os._exit
_pickle_dumps, _sha256 = pickle.dumps, hashlib.sha256


def _tasks_here() -> int:
    """Tasks (processes and threads) visible in /proc: in the sandbox's pid namespace, all of it."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return count


def _vm_size() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def apply_limits(limits: dict) -> None:
    """rlimits inherited by every later process. RLIMIT_NPROC is counted per user namespace, so
    in the strong mode (a fresh user namespace per grade) it bounds this grade's tasks alone;
    with RLIMIT_AS per process, the grade's address space is at most nproc x memory."""
    mib = 1 << 20
    address_space = _vm_size() + int(limits["memory_mb"]) * mib
    nproc = int(limits["nproc"]) + (_tasks_here() if limits["count_tasks"] else 0)
    cpu = int(limits["cpu_s"])
    for which, value in ((resource.RLIMIT_AS, address_space), (resource.RLIMIT_NPROC, nproc),
                         (resource.RLIMIT_FSIZE, int(limits["fsize_mb"]) * mib),
                         (resource.RLIMIT_NOFILE, 256), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))  # SIGXCPU first, then SIGKILL


def _frame(fd: int, message: dict) -> None:
    data = _dumps(message, separators=(",", ":")).encode()
    data = len(data).to_bytes(4, "big") + data
    while data:
        data = data[_write(fd, data):]


def _describe(exc: BaseException) -> tuple[str, str]:
    try:
        name = type(exc).__name__
        name = name if type(name) is str else "BaseException"
    except BaseException:
        name = "BaseException"
    try:
        message = str(exc)[:200]
        message = message if type(message) is str else ""
    except BaseException:
        message = ""
    return name[:80], message


def _digest(output) -> str | None:
    """sha256 of the output's pickle (protocol 4, as oracle.py hashes the expected outputs)."""
    try:
        return _sha256(_pickle_dumps(output, protocol=4)).hexdigest()
    except Exception:  # not picklable: only the wire can carry it (or not)
        return None


def run_split(fd: int, job: dict, split: dict, evalplus) -> None:
    """In the forked process: the same steps as evalplus's ``unsafe_execute``."""
    name = split["name"]
    if evalplus is not None:
        evalplus.reliability_guard(None)  # memory is bounded by our rlimits instead
    swallow = evalplus.swallow_io if evalplus is not None else contextlib.nullcontext
    time_limit = evalplus.time_limit if evalplus is not None else contextlib.nullcontext
    exec_globals: dict = {}
    try:
        with swallow():
            exec(job["code"], exec_globals)
        function = exec_globals[job["entry_point"]]
    except BaseException as exc:  # the module itself failed: report where and how
        missing = type(exc) is KeyError and job["entry_point"] not in exec_globals
        stage = "lookup" if missing else "exec"
        exc_name, message = _describe(exc)
        _frame(fd, {"k": "exc", "split": name, "i": -1, "stage": stage, "name": exc_name,
                    "msg": message})
        return
    _frame(fd, {"k": "ready", "split": name})
    for index, (args, seconds) in enumerate(zip(split["inputs"], split["limits"])):
        try:
            with time_limit(seconds), swallow():
                output = function(*args)
            digest = _digest(output)
            try:
                text = wire.encode(output, job["max_nodes"], job["max_depth"])
            except wire.Unencodable:
                if digest is None:
                    raise
                text = None  # too big to send: the digest alone can still prove equality
        except BaseException as exc:
            exc_name, message = _describe(exc)
            _frame(fd, {"k": "exc", "split": name, "i": index, "stage": "call", "name": exc_name,
                        "msg": message})
            return
        _frame(fd, {"k": "out", "split": name, "i": index, "v": text, "h": digest})


def _sweep() -> None:
    """Kill every other process of the sandbox (not its init): a split leaves nothing behind."""
    with contextlib.suppress(OSError):
        os.kill(-1, signal.SIGKILL)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def main(argv: list[str]) -> int:
    fd = int(argv[1])
    job = pickle.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    utils = job["evalplus_utils"]
    evalplus = _load("evalplus_eval_utils", utils) if utils else None
    if job["site_packages"]:
        sys.path.append(job["site_packages"])  # numpy etc., as evalplus's own process has them
    apply_limits(job["limits"])
    _frame(fd, {"k": "start"})  # last trusted step: from here on, what happens is the code's
    try:
        compile(job["code"], "<solution>", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as exc:
        exc_name, message = _describe(exc)
        _frame(fd, {"k": "syntax", "name": exc_name, "msg": message})
        return 0
    for split in job["splits"]:
        pid = os.fork()
        if pid == 0:
            try:
                run_split(fd, job, split, evalplus)
            finally:
                _exit(0)
        try:
            status = os.waitpid(pid, 0)[1]
        except ChildProcessError:
            status = -1
        # tells the grader how the split's process ended (it stops reading a split at its last
        # test, and skips this frame then)
        _frame(fd, {"k": "exit", "split": split["name"],
                    "signal": os.WTERMSIG(status) if status > 0 and os.WIFSIGNALED(status) else 0})
        if job["sweep"]:
            _sweep()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
