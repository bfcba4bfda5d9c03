"""Hostile generated code through the real MBPP+ grader: each attempt is a failed (non-infra)
result, the grader keeps grading correctly afterwards, no sandboxed process outlives the grade,
and the host's files, environment and loopback services are untouched.

The code runs inside ``square_perimeter`` (Mbpp/17) and uses ``posix``/``io.open`` directly, which
evalplus's in-process guard does not stop, so what contains it is the OS-level sandbox."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

TASK = "Mbpp/17"


def hostile(body: str, **constants) -> str:
    header = "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"```python\nimport io, os, posix\n{header}def square_perimeter(a):\n{indented}\n```"


def full_isolation(grader) -> bool:
    return grader.isolation.startswith("bwrap")


@pytest.fixture
def assert_contained(strict_grader, mbpp_tasks, mbpp_dataset, own_sandbox_processes):
    """Grade hostile output; check it failed cleanly, left nothing running, and the grader still
    grades a correct solution afterwards."""

    def check(output: str, *statuses: str):
        started = time.monotonic()
        result = strict_grader.grade(mbpp_tasks[TASK], output)
        assert not result.passed and not result.infra_failure, result
        if statuses:
            assert result.exit_status in statuses, result
        assert time.monotonic() - started < strict_grader.sandbox.limits.budget_s + 12
        assert own_sandbox_processes() == set()
        good = strict_grader.grade(mbpp_tasks[TASK], mbpp_dataset.problem(TASK)["canonical_solution"])
        assert good.passed, good.trace
        return result

    return check


def test_infinite_loop_that_swallows_timeouts(assert_contained):
    body = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    assert_contained(hostile(body), "timeout")


@pytest.mark.parametrize("fork", ["posix.fork()", "__import__('ctypes').CDLL(None).fork()"])
def test_fork_bomb_is_bounded_and_fully_killed(assert_contained, fork):
    body = f"while True:\n    try:\n        {fork}\n    except BaseException:\n        pass"
    assert_contained(hostile(body), "timeout")


def test_detached_sleepers_do_not_outlive_the_grade(assert_contained):
    body = "if posix.fork() == 0:\n    posix.setsid()\n    import time\n    time.sleep(600)\nreturn 4 * a + 1"
    assert_contained(hostile(body), "failed_tests")


@pytest.mark.parametrize("body", [
    "return len(bytearray(8 * 1024 ** 3))",
    "hog = []\nwhile True:\n    hog.append(bytearray(32 * 1024 * 1024))",
])
def test_memory_hog_hits_the_memory_limit(assert_contained, body):
    assert_contained(hostile(body), "memory")


def test_files_outside_the_sandbox_are_untouched(assert_contained, tmp_path, groundtruth_store):
    canary = tmp_path / "canary.txt"
    canary.write_text("alive")
    var_canary = Path(f"/var/tmp/ratchet-canary-{uuid.uuid4().hex}")
    var_canary.write_text("alive")
    oracle = groundtruth_store.path(TASK)
    oracle_digest = hashlib.sha256(oracle.read_bytes()).hexdigest()
    tag = uuid.uuid4().hex
    escapes = [f"/tmp/ratchet-escape-{tag}", f"/var/tmp/ratchet-escape-{tag}",
               f"/dev/shm/ratchet-escape-{tag}", str(Path.cwd() / f"ratchet-escape-{tag}"),
               str(Path.home() / f"ratchet-escape-{tag}"), str(tmp_path / f"escape-{tag}")]
    body = """
outcomes = []
for victim in VICTIMS:
    for attack in ("unlink", "truncate", "rename"):
        try:
            if attack == "unlink":
                posix.unlink(victim)
            elif attack == "truncate":
                posix.close(posix.open(victim, posix.O_WRONLY | posix.O_TRUNC))
            else:
                posix.rename(victim, victim + ".moved")
            outcomes.append(attack + ":done")
        except OSError as exc:
            outcomes.append(attack + ":" + type(exc).__name__)
for path in ESCAPES:
    try:
        with io.open(path, "w") as handle:
            handle.write("escaped")
    except OSError as exc:
        outcomes.append("write:" + type(exc).__name__)
return " ".join(outcomes)
"""
    try:
        result = assert_contained(hostile(body, VICTIMS=[str(canary), str(var_canary), str(oracle)],
                                          ESCAPES=escapes), "failed_tests")
        assert canary.read_text() == "alive" and var_canary.read_text() == "alive"
        assert hashlib.sha256(oracle.read_bytes()).hexdigest() == oracle_digest
        assert [p for p in escapes if os.path.exists(p)] == []
        assert "returned" in result.trace
    finally:
        var_canary.unlink(missing_ok=True)
        for path in escapes:
            Path(path).unlink(missing_ok=True)


def test_credentials_in_the_grader_environment_are_invisible(assert_contained, strict_grader, monkeypatch):
    secret = f"fake-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    body = """
found = [k for k, v in os.environ.items() if SECRET in v]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with io.open("/proc/" + pid + "/environ", "rb") as handle:
                if SECRET.encode() in handle.read():
                    found.append(pid)
        except OSError:
            pass
return ("LEAK " + repr(found)) if found else ("NOLEAK " + " ".join(sorted(os.environ)))
"""
    result = assert_contained(hostile(body, SECRET=secret), "failed_tests")
    assert "NOLEAK" in result.trace and "LEAK [" not in result.trace and secret not in result.trace
    assert "AWS_SECRET_ACCESS_KEY" not in result.trace


def test_loopback_socket_cannot_reach_the_host(assert_contained, strict_grader):
    if not full_isolation(strict_grader):
        pytest.skip(f"no network namespace here: {strict_grader.isolation}")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                received.append(conn.recv(100) or b"<connected>")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # same port number, UDP
    udp.bind(("127.0.0.1", server.getsockname()[1]))
    udp.settimeout(1.0)
    body = """
import socket
outcomes = []
try:
    conn = socket.create_connection(("127.0.0.1", PORT), timeout=1)
    conn.sendall(b"pwned")
    outcomes.append("CONNECTED")
except OSError as exc:
    outcomes.append("tcp:" + type(exc).__name__ + ":" + str(exc.errno))
try:  # the sandbox's own loopback is up; a datagram to the host would reach the UDP socket
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", PORT))
    outcomes.append("udp-sent-to-own-loopback")
except OSError as exc:
    outcomes.append("udp:" + type(exc).__name__)
return " ".join(outcomes)
"""
    try:
        result = assert_contained(hostile(body, PORT=server.getsockname()[1]), "failed_tests")
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        try:
            datagram = udp.recv(100)
        except OSError:  # timeout: nothing arrived
            datagram = b""
        udp.close()
    assert received == [] and datagram == b""
    assert "CONNECTED" not in result.trace
    assert "tcp:" in result.trace  # the attempt ran and was refused inside the sandbox


def test_killing_everything_it_can_see_spares_the_grader(assert_contained, strict_grader):
    if not full_isolation(strict_grader):
        pytest.skip(f"same-user sandbox: kill(-1) would hit the test runner ({strict_grader.isolation})")
    body = "for pid in (-1, posix.getppid(), 1):\n    try:\n        posix.kill(pid, 9)\n    except OSError:\n        pass\nreturn 0"
    assert_contained(hostile(body), "failed_tests", "crashed", "timeout")
