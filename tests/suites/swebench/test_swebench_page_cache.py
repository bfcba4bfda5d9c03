"""No mark survives between sessions, and no session is first (issue 49), on the local images.

A beacon through the host's page cache (``page_cache_beacon``) carries 128 bits from one
container to the next almost without error; with the grader's clearing between them
(``proof.host_marks``), what the next container reads agrees with what was written at chance.
A patch that cheats only in the first session of its grade (it finds no mark there) is
``test_tampering`` when a canary session comes first (the odds are test_swebench_order.py's);
with the page cache cleared before each session every session is first, and it is caught."""

from __future__ import annotations

import re

import pytest

import swebench_instances
from page_cache_beacon import BEACON_FILES, FIRST_FORGER, Trial
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.proof import prover
from ratchet_ray.suites.swebench.proof.host_marks import drop_dentries

pytestmark = pytest.mark.docker
CALC = "ratchet__calc-1"
BITS = 128


def _run(client, command: list[str]) -> str:
    out = client.containers.run(swebench_instances.BASE_IMAGE, command, remove=True, user="65534",
                                network_disabled=True, labels={"ratchet.test": "beacon"})
    return out.decode().strip()


@pytest.fixture
def trial(docker_client) -> Trial:
    return Trial(docker_client, swebench_instances.BASE_IMAGE, BITS)


def test_a_page_cache_beacon_carries_bits_between_sessions_until_the_grader_clears_it(trial):
    # the best of three: another grader on this host clears the page cache before its sessions
    before = [trial.page_cache(clear=False) for _ in range(3)]
    assert max(before) >= 0.9, before
    after = trial.page_cache(clear=True)
    # cleared, the pages read evicted (or cached by whatever else reads them meanwhile): the
    # bits say nothing of what was sent
    assert abs(after - 0.5) <= 0.2, after


def test_a_dentry_beacon_carries_bits_between_sessions_until_the_grader_drops_them(trial):
    before = [trial.dentries(clear=False) for _ in range(3)]
    assert max(before) >= 0.8, before  # names looked up by the last container answer faster
    after = [trial.dentries(clear=True) for _ in range(2)]
    assert all(abs(a - 0.5) <= 0.2 for a in after), after


def test_a_grader_that_cannot_drop_the_dentries_says_why(tmp_path):
    dropped = drop_dentries(str(tmp_path))  # a folder: not writable as a file, as /proc/sys in a container
    assert dropped.reason and "swebench.clear_dentry_cache=false" in dropped.describe()
    assert dropped.describe().startswith("dentry and inode caches NOT dropped")


@pytest.fixture
def serial_grader(docker_client, local_settings, limits, tmp_path):
    local_settings.canary_parallel = 1  # one session at a time: "first" is well defined
    return SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)


def _no_mark(client) -> None:
    """Every page of the beacon's files read (cached): no mark, as before a grade's first session."""
    _run(client, ["sh", "-c", f"find {BEACON_FILES.split('**')[0]} -name '*.pm' -exec cat {{}} + >/dev/null"])


def _first(label: str):
    def order(plans, rng=None):
        return sorted(plans, key=lambda p: not p.label.startswith(label))
    return order


def test_a_forger_that_cheats_when_first_is_caught_when_a_canary_session_is_first(
        serial_grader, tasks, monkeypatch):
    serial_grader.settings.clear_page_cache = False  # the beacon works: only the order protects
    serial_grader.settings.clear_dentry_cache = False
    monkeypatch.setattr(prover, "shuffled", _first("canary"))
    _no_mark(serial_grader._client)
    caught = serial_grader.grade(tasks[CALC], FIRST_FORGER)
    assert caught.exit_status == "test_tampering", caught.trace
    # the canary session that came first forced its mutant; the sessions after it found the mark
    # and behaved (unless another grader on this host cleared the page cache meanwhile: then
    # they forced too, and the real grade's canary sessions are caught all the same)
    assert re.search(r"canary session 1 of \d \([\d.]+s\), mutant \S+ \(tests/test_ops\.py:\d+\): "
                     r"reported PASSED", caught.trace), caught.trace
    # The real session first (1 grade in k+1) is what test_swebench_order.py counts: on a host
    # shared with other graders, which clear the page cache before their sessions, the mark
    # that would fool the canary sessions is not reliably there.


def test_with_the_page_cache_cleared_every_session_is_first_and_the_forger_is_caught(
        serial_grader, tasks):
    assert serial_grader.settings.clear_page_cache
    result = serial_grader.grade(tasks[CALC], FIRST_FORGER.replace("_MARK = [", "_MARK  = ["))
    assert result.exit_status == "test_tampering", result.trace
    log = result.trace + open(result.trace.rsplit("log: ", 1)[1].strip() + "/run_instance.log").read()
    assert "page cache of the image's" in log
    assert "host's dentry and inode caches dropped before the session" in log
