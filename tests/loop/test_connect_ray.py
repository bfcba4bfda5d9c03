"""The one ``ray.init`` of the library (``loop.runtime.connect_ray``, used by
``loop.session.ray_session``): which Ray it joins or starts, with what settings, and that the
session shuts down only the Ray it connected. ``ray.init``/``shutdown`` are recorders here: what
is checked is the choice, not Ray starting (the loop tests start real ones)."""

from __future__ import annotations

import pytest

from ratchet_ray.loop import runtime, session
from ratchet_ray.suites.hooks import local_resources


@pytest.fixture
def calls(monkeypatch):
    """Ray as seen by ``connect_ray``: not connected; ``init``/``shutdown`` record their calls."""
    seen: list = []
    monkeypatch.setattr(runtime.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(runtime.ray, "init", lambda **kw: seen.append(("init", kw)))
    monkeypatch.setattr(runtime.ray, "shutdown", lambda: seen.append(("shutdown", {})))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    # The addresses below are made up: nothing is probed (``test_ray_doors`` probes real ones).
    monkeypatch.setattr(runtime, "ray_problem", lambda address=None: None)
    return seen


def test_no_address_starts_a_loopback_ray_offering_the_local_resources(calls):
    with session.ray_session() as connected:
        assert connected
    (name, options), shutdown = calls
    assert name == "init" and shutdown[0] == "shutdown"
    # "local": a Ray of its own, never a head some other process left running here.
    assert options["address"] == "local" and options["_node_ip_address"] == "127.0.0.1"
    # What the registered suites declare a local machine offers (SWE-bench: a Docker slot per CPU).
    assert options["resources"] == local_resources() and local_resources()["docker"] >= 1
    assert options["_system_config"] == runtime.LOCAL_RAY_SYSTEM_CONFIG
    assert not options["log_to_driver"] and not options["include_dashboard"]


def test_ray_address_is_joined_with_the_workers_logs(calls, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert runtime.connect_ray()
    assert calls == [("init", {"address": None, "configure_logging": False,
                               "log_to_driver": True})]


def test_a_given_address_is_joined_without_local_settings(calls, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert runtime.connect_ray("10.0.0.2:6379")
    assert calls == [("init", {"address": "10.0.0.2:6379", "configure_logging": False,
                               "log_to_driver": False})]


def test_a_connected_ray_is_used_and_left_running(calls, monkeypatch):
    monkeypatch.setattr(runtime.ray, "is_initialized", lambda: True)
    with pytest.raises(KeyError):
        with session.ray_session("10.0.0.2:6379") as connected:
            assert not connected
            raise KeyError("the block failed")
    assert calls == []


def test_the_session_shuts_down_what_it_started_however_the_block_ends(calls):
    with pytest.raises(KeyError):
        with session.ray_session():
            raise KeyError("the block failed")
    assert [name for name, _ in calls] == ["init", "shutdown"]


@pytest.mark.parametrize("failure", [
    RuntimeError("Failed to start GCS: timed out after 30 s"),
    TimeoutError("raylet did not register in time"),
])
def test_a_local_ray_that_cannot_start_is_one_line_with_the_fix(calls, monkeypatch, failure):
    def fail(**_):
        raise failure

    monkeypatch.setattr(runtime.ray, "init", fail)
    with pytest.raises(runtime.RayStartError) as caught:
        runtime.connect_ray()
    text = caught.value.format_message()
    assert "\n" not in text and type(failure).__name__ in text and str(failure) in text
    assert text.startswith("cannot start a local Ray") and "--address" in text
    assert caught.value.cause is failure


def test_an_unreachable_cluster_names_the_address_it_tried(calls, monkeypatch):
    def fail(**_):
        raise ConnectionError("Could not find any running Ray instance.\nPlease specify one")

    monkeypatch.setattr(runtime.ray, "init", fail)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    with pytest.raises(runtime.RayStartError) as caught:
        with session.ray_session():
            pass
    text = caught.value.format_message()
    assert text.startswith("cannot join the Ray cluster at 10.0.0.9:6379") and "\n" not in text
    assert [name for name, _ in calls] == []  # nothing started, so nothing to shut down


@pytest.mark.parametrize("tmpdir", [True, False], ids=["RAY_TMPDIR", "default-tmp"])
def test_a_local_ray_whose_temp_disk_is_full_is_refused_before_ray_init(calls, monkeypatch,
                                                                       tmp_path, tmpdir):
    """A full RAY_TMPDIR (or /tmp): Ray's processes could not write their address files and
    ``ray.init`` gave up after 30 s, after the run dir was made, with "Timed out waiting for
    file .../gcs_server_port_..." and advice about a loaded machine. Now refused first, naming
    the folder, what is free and the fix."""
    import shutil
    from collections import namedtuple

    if tmpdir:
        monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "ray_tmp"))  # made by Ray: its parent
    else:
        monkeypatch.delenv("RAY_TMPDIR", raising=False)
    usage = namedtuple("usage", "total used free")
    measured: list = []

    def full(path):
        measured.append(str(path))
        return usage(2**30, 2**30 - 2**20, 2**20)  # 1 MiB free

    monkeypatch.setattr(shutil, "disk_usage", full)
    with pytest.raises(runtime.RayStartError) as caught:
        runtime.connect_ray()
    text = caught.value.format_message()
    where = str(tmp_path) if tmpdir else "/tmp"
    assert measured == [where] and calls == []  # measured where it would be made; no ray.init
    named = f"RAY_TMPDIR={tmp_path / 'ray_tmp'}" if tmpdir else "/tmp (Ray's temp folder)"
    assert text.startswith(f"a local Ray has no room for its session folder under {named}")
    assert "1.0 MiB free" in text and f"df -h {where}" in text and "\n" not in text
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**40, 0, 2**40))
    runtime.connect_ray()  # room: Ray is started
    assert [name for name, _ in calls] == ["init"]
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")  # a cluster's Ray: not this disk's
    monkeypatch.setattr(shutil, "disk_usage", full)
    runtime.connect_ray()
    assert [name for name, _ in calls] == ["init", "init"]


def test_a_traceback_ray_sends_back_is_cut_to_its_last_line(calls, monkeypatch):
    """Ray Client's server answers a failed start with its own traceback: the line quoted it
    ("... Traceback (most recent call last): File ".../proxier.py", line 772, in Datapath ...")
    and the 300 characters kept could end before the error it names."""
    said = ("Initialization failure from server:\nTraceback (most recent call last):\n  File "
            "\"/x/ray/util/client/server/proxier.py\", line 772, in Datapath\n    raise "
            "RuntimeError(\nRuntimeError: Starting Ray client server failed. See "
            "ray_client_server_23000.err for detailed logs.\n")

    def fail(**_):
        raise ConnectionAbortedError(said)

    monkeypatch.setattr(runtime.ray, "init", fail)
    monkeypatch.setenv("RAY_ADDRESS", "ray://127.0.0.1:10001")
    with pytest.raises(runtime.RayStartError) as caught:
        runtime.connect_ray()
    text = caught.value.format_message()
    assert "Traceback" not in text and "proxier.py" not in text and "\n" not in text
    assert ("cannot join the Ray cluster at ray://127.0.0.1:10001 (ConnectionAbortedError: "
            "Initialization failure from server: RuntimeError: Starting Ray client server "
            "failed. See ray_client_server_23000.err for detailed logs.)") in text, text
