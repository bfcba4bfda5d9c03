"""The hostile-code guarantees with the grader itself running as a NON-ROOT user, as on a cluster.

CI runs as root, so the test starts the grader (``nonroot_grader.py``, a real ``MbppGrader`` in
its own process) under a fresh unprivileged uid: ``unshare --mount`` + ``nonroot_launch.py``
(which only makes the root-owned Python runtime reachable, then drops to the uid). As a plain
user the test runs the helper directly. Secrets are placed in the grader process's real
environment; the test listens on 127.0.0.1, watches every process of the uid, its total memory,
SysV segments and /dev/shm, and checks files the uid could write outside the sandbox."""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TASK = "Mbpp/17"
LIMITS = {"budget_s": 5.0, "memory_mb": 160, "nproc": 4, "grace_s": 10.0}
MIB = 1024 * 1024


def hostile(body: str, **constants) -> str:
    header = "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"```python\nimport io, os, posix\n{header}def square_perimeter(a):\n{indented}\n```"


SECRET_HUNT = """
found = [k for k, v in os.environ.items() if SECRET in v]
for pid in posix.listdir("/proc"):
    if pid.isdigit():
        for part in ("environ", "cmdline"):
            try:
                with io.open("/proc/" + pid + "/" + part, "rb") as handle:
                    if SECRET.encode() in handle.read():
                        found.append(pid + "/" + part)
            except OSError:
                pass
return ("LEAK " + repr(found)) if found else "NOLEAK pids=" + str(len([p for p in posix.listdir("/proc") if p.isdigit()]))
"""
WRITES = """
outcomes = ""
for path in ESCAPES:
    try:
        with io.open(path, "w") as handle:
            handle.write("escaped")
        outcomes += "W"
    except OSError as exc:
        outcomes += "D"
with io.open("/tmp/scratch-file", "w") as handle:
    handle.write("x")
return "writes=" + outcomes + " scratch:ok"
"""
CONNECT = """
import socket
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=1).sendall(b"pwned")
    return "CONNECTED"
except OSError as exc:
    return "tcp:" + type(exc).__name__
"""
LEFTOVERS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
segment = libc.shmget(KEY, 1 << 20, 0o1666)
fd = posix.open("/dev/shm/" + SHM_NAME, posix.O_CREAT | posix.O_WRONLY, 0o666)
posix.write(fd, b"x" * 4096)
if posix.fork() == 0:
    posix.setsid()
    if posix.fork() == 0:
        import time
        time.sleep(600)
    posix._exit(0)
return "left segment=" + str(segment)
"""
KEYRING = """
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
add_key, request_key = {"x86_64": (248, 249), "aarch64": (217, 218)}[platform.machine()]
found = libc.syscall(request_key, b"user", TAG.encode(), None, 0)  # every keyring it holds
added = [libc.syscall(add_key, b"user", TAG.encode(), b"v", 1, ring) > 0 for ring in (-3, -4, -5)]
return "keyring found=%d added=%d errno=%d" % (found, sum(added), ctypes.get_errno())
"""
FORK_HOG = """
import time
for _ in range(20):
    try:
        pid = posix.fork()
    except OSError:
        break
    if pid == 0:
        try:
            hog = bytearray(100 * 1024 * 1024)
        except MemoryError:
            pass
        time.sleep(60)
        posix._exit(0)
try:
    hog = bytearray(100 * 1024 * 1024)
except MemoryError:
    pass
time.sleep(60)
"""


def _free_uid() -> int:
    while True:
        uid = 200_000 + secrets.randbelow(100_000)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid


def _processes(uid: int) -> dict[int, int]:
    """pid -> resident bytes of every process (zombies included, at 0) owned by ``uid``."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1 ").split()[0]) == uid:
            found[int(entry)] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    return found


def _shm_segments(uid: int) -> list[str]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return [line for line in lines if int(line.split()[7]) == uid]  # the "uid" column


@pytest.fixture
def nonroot_env(groundtruth_store, mbpp_dataset):
    """A uid, a store readable by it (copied as verified blobs) and a dir it may write to."""
    uid = _free_uid() if os.geteuid() == 0 else os.geteuid()
    top = Path(tempfile.mkdtemp(prefix="ratchet-nonroot-"))
    top.chmod(0o755)
    store_dir, writable = top / "store", top / "home"
    for path in (store_dir, writable):
        path.mkdir()
        os.chown(path, uid, uid) if os.geteuid() == 0 else None
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore

    copy = GroundTruthStore(mbpp_dataset, cache_dir=store_dir)
    for task_id in ("Mbpp/17", "Mbpp/3"):
        copy.add_blob(task_id, *groundtruth_store.blob(task_id))
    if os.geteuid() == 0:
        for path in [store_dir, *store_dir.rglob("*")]:
            os.chown(path, uid, uid)
    yield uid, store_dir, writable
    shutil.rmtree(top, ignore_errors=True)


def _run_as_nonroot(uid: int, store_dir: Path, home: Path, jobs: list[dict], env: dict) -> list[dict]:
    command = [sys.executable, str(HERE / "nonroot_grader.py"), str(store_dir)]
    if os.geteuid() == 0:
        runtime = [sys.base_prefix, sys.prefix, sysconfig.get_paths()["purelib"]]
        command = ["unshare", "--mount", "--propagation", "private", sys.executable, "-I", "-S",
                   str(HERE / "nonroot_launch.py"), str(uid), *runtime, "--", *command]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "RATCHET_REPO": str(REPO),
           "MBPP_OVERRIDE_PATH": os.environ["MBPP_OVERRIDE_PATH"],
           "RATCHET_TEST_LIMITS": json.dumps(LIMITS), **env}
    done = subprocess.run(command, input=json.dumps(jobs), capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    header, results = lines[0], lines[1:]
    assert header["uid"] == uid and header["euid"] == uid and header["uid"] != 0, header
    assert header["isolation"].startswith("bwrap"), header
    return results


def test_hostile_code_is_contained_when_the_grader_is_not_root(nonroot_env, mbpp_dataset):
    uid, store_dir, home = nonroot_env
    secret = f"fake-secret-{uuid.uuid4().hex}"
    tag = uuid.uuid4().hex[:12]
    escapes = [str(home / f"escape-{tag}"), str(store_dir / f"escape-{tag}"),
               f"/tmp/ratchet-escape-{tag}", f"/var/tmp/ratchet-escape-{tag}",
               f"/dev/shm/ratchet-escape-{tag}", str(REPO / f"escape-{tag}")]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    received: list[bytes] = []
    peak = {"rss": 0}
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                with conn:
                    received.append(conn.recv(100) or b"<connected>")
            except OSError:
                pass
            peak["rss"] = max(peak["rss"], sum(_processes(uid).values()) if os.geteuid() == 0 else 0)

    def sample_memory():
        while not stop.is_set():
            procs = _processes(uid)
            procs.pop(os.getpid(), None)
            peak["rss"] = max(peak["rss"], sum(procs.values()))
            time.sleep(0.01)

    threads = [threading.Thread(target=watch, daemon=True), threading.Thread(target=sample_memory, daemon=True)]
    for thread in threads:
        thread.start()
    canonical = mbpp_dataset.problem(TASK)["canonical_solution"]
    jobs = [
        {"task_id": TASK, "output": hostile(SECRET_HUNT, SECRET=secret)},
        {"task_id": TASK, "output": hostile(WRITES, ESCAPES=escapes)},
        {"task_id": TASK, "output": hostile(CONNECT, PORT=server.getsockname()[1])},
        {"task_id": TASK, "output": hostile(LEFTOVERS, KEY=0x5EC0000 + secrets.randbelow(1 << 16),
                                            SHM_NAME=f"ratchet-{tag}")},
        {"task_id": TASK, "output": hostile(FORK_HOG)},
        {"task_id": TASK, "output": hostile(KEYRING, TAG=f"ratchet-{tag}")},
        {"task_id": TASK, "output": hostile(KEYRING, TAG=f"ratchet-{tag}")},
        {"task_id": TASK, "output": canonical},
        {"task_id": "Mbpp/3", "output": mbpp_dataset.problem("Mbpp/3")["canonical_solution"]},
        {"task_id": TASK, "output": hostile("class Liar:\n    def __eq__(self, o): return True\nreturn Liar()")},
    ]
    try:
        results = _run_as_nonroot(uid, store_dir, home, jobs,
                                  {"RATCHET_TEST_SECRET": secret, "AWS_SECRET_ACCESS_KEY": secret})
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)
        server.close()
    hunt, writes, connect, leftovers, hog, keys, keys_again, good, good3, liar = results
    for result in (hunt, writes, connect, leftovers, hog, keys, keys_again, liar):
        assert not result["passed"] and not result["infra_failure"], result
    assert "NOLEAK" in hunt["trace"] and secret not in hunt["trace"], hunt
    # /tmp and /dev/shm inside are the sandbox's private scratch: writes land there, not here
    verdicts = writes["trace"].split("writes=", 1)[1].split()[0]
    assert "scratch:ok" in writes["trace"] and len(verdicts) == len(escapes), writes
    for path, verdict in zip(escapes, verdicts):
        assert verdict == "D" or path.startswith(("/tmp/", "/dev/shm/")), (path, writes)
    assert [path for path in escapes if os.path.exists(path)] == []
    assert "tcp:" in connect["trace"] and "CONNECTED" not in connect["trace"] and received == []
    assert "left segment=" in leftovers["trace"] and "segment=-1" not in leftovers["trace"], leftovers
    assert hog["exit_status"] == "timeout", hog
    # the kernel's keyrings (session, user, user-session) are the grade's own: a key one grade
    # of this uid adds is not there for the next, so no grade leaves a note for a later one
    # (a seccomp profile that refuses the calls, as Docker's default does, leaves none to find)
    assert re.search(r"keyring found=-1 added=(3|0 errno=(1|38)\b)", keys["trace"]), keys
    assert "keyring found=-1 " in keys_again["trace"], keys_again
    assert good["passed"] and good3["passed"], (good, good3)
    # nothing of the uid survives its grader: no process, no SysV segment, no /dev/shm file
    assert _processes(uid) == {}
    assert _shm_segments(uid) == []
    assert [p for p in Path("/dev/shm").iterdir() if p.stat().st_uid == uid] == []
    if os.geteuid() == 0:  # the uid is this test's alone, so its memory is the sandbox's
        bound = (LIMITS["nproc"] + 2) * (LIMITS["memory_mb"] + 64) * MIB
        assert 100 * MIB < peak["rss"] < bound, (peak, bound)
        print(f"peak resident memory of the forking hog's uid: {peak['rss'] / MIB:.0f} MiB "
              f"(bound {bound / MIB:.0f} MiB; the hog asked for 2100 MiB)")
