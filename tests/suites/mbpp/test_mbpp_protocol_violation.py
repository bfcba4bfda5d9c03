"""MBPP+: code that writes forged frames on the grader's channel is graded ``protocol_violation``
(a tampering status of ``evidence.tampering``, which the Curator retires a skill for), not a
plain wrong answer and never an infrastructure failure; honest failures keep their statuses."""

from __future__ import annotations

import pytest

from ratchet_ray.evidence.tampering import PROTOCOL_VIOLATION, TAMPERING_STATUSES

TASK = "Mbpp/3"  # is_not_prime(n) -> bool


def forging(entry: str, frame: str) -> str:
    """A solution that writes ``frame`` (JSON) as a length-prefixed frame on every descriptor
    when it is called, then exits 0. The channel keeps the grading process's descriptor number,
    which a process with many sockets open (a Ray worker, a long test session) puts past 63:
    the forger tries them all, as a real one would."""
    body = (f"import posix\nfake = {frame!r}.encode()\nfor fd in range(3, 4096):\n"
            "    try:\n        posix.write(fd, len(fake).to_bytes(4, 'big') + fake)\n"
            "    except OSError:\n        pass\n")
    indented = "\n".join("    " + line for line in body.splitlines())
    return f"```python\ndef {entry}(n):\n{indented}\n    posix._exit(0)\n```"


@pytest.mark.parametrize("case, frame, where", [
    ("wrong index", '{"k":"out","split":"base","i":99,"v":"true"}',
     "protocol violation at base test 1/"),
    ("a claimed pass", '{"k":"pass","passed":true}', "protocol violation at base test 1/"),
    ("not JSON", '{{{', "malformed message from the sandbox"),
    ("a value that is not wire text", '{"k":"out","split":"base","i":0,"v":7}',
     "protocol violation at base test 1/"),
])
def test_forged_frames_are_a_protocol_violation(strict_grader, mbpp_tasks, mbpp_dataset, case,
                                                frame, where):
    entry = mbpp_dataset.problem(TASK)["entry_point"]
    result = strict_grader.grade(mbpp_tasks[TASK], forging(entry, frame))
    assert not result.passed and not result.infra_failure, (case, result)
    assert result.exit_status == PROTOCOL_VIOLATION in TAMPERING_STATUSES, (case, result)
    assert where in result.trace, (case, result.trace)


def test_honest_failures_are_not_tampering(strict_grader, mbpp_tasks, mbpp_dataset):
    entry = mbpp_dataset.problem(TASK)["entry_point"]
    wrong = strict_grader.grade(mbpp_tasks[TASK], f"```python\ndef {entry}(n):\n    return None\n```")
    died = strict_grader.grade(mbpp_tasks[TASK],
                               f"```python\nimport os\ndef {entry}(n):\n    os._exit(0)\n```")
    assert (wrong.exit_status, died.exit_status) == ("failed_tests", "crashed")
    assert not {wrong.exit_status, died.exit_status} & TAMPERING_STATUSES


@pytest.mark.parametrize("name", ["protocol_violation", "ok", "sandbox_setup_error"])
def test_an_exception_named_like_a_verdict_does_not_become_one(strict_grader, mbpp_tasks,
                                                              mbpp_dataset, name):
    """A raised exception is graded under its class name, which the code chooses: one named like
    a verdict of the grader's own is ``raised_<name>``, so raising ``protocol_violation`` is not
    tampering (a skill retired for it) and ``ok`` is not a status that reads as a pass."""
    entry = mbpp_dataset.problem(TASK)["entry_point"]
    code = f"```python\ndef {entry}(n):\n    raise type({name!r}, (Exception,), {{}})('x')\n```"
    result = strict_grader.grade(mbpp_tasks[TASK], code)
    assert (result.passed, result.infra_failure) == (False, False), result
    assert result.exit_status == f"raised_{name}" not in TAMPERING_STATUSES, result
