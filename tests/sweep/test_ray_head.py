"""The sweep's local Ray head on a machine that has never run Ray: no ``~/.ray/auth_token``."""

from __future__ import annotations

import os
import sys

import pytest

from ratchet_ray.sweep.ray_head import ensure_auth_token, ray_cluster


def _fresh_home(tmp_path, mode: str | None = "token") -> dict[str, str]:
    """This process's environment with a HOME that holds no Ray token and no token variables."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE", "RAY_ADDRESS")}
    env["HOME"] = str(tmp_path / "home")
    if mode is not None:
        env["RAY_AUTH_MODE"] = mode
    return env


def test_a_token_is_made_once_under_token_mode_and_never_otherwise(tmp_path):
    env = _fresh_home(tmp_path)
    token = tmp_path / "home" / ".ray" / "auth_token"
    ensure_auth_token(env)
    first = token.read_text()
    assert len(first) >= 16
    ensure_auth_token(env)  # an existing token is kept: clients already hold it
    assert token.read_text() == first

    other = tmp_path / "other"
    ensure_auth_token(_fresh_home(other, mode="disabled"))
    ensure_auth_token(_fresh_home(other, mode=None))
    assert not (other / "home" / ".ray").exists()


def test_the_local_head_starts_on_a_machine_without_a_token(tmp_path):
    # The fresh-clone CI failure: `ray start --head` under RAY_AUTH_MODE=token refuses to start
    # when no token exists, and only a local ray.init() had ever made one.
    env = _fresh_home(tmp_path, mode=None)
    with ray_cluster(1, tmp_path / "head.log", env=env) as joined:
        assert joined["RAY_AUTH_MODE"] == "token"
        assert (tmp_path / "home" / ".ray" / "auth_token").is_file()


def test_a_dashboard_port_taken_meanwhile_starts_the_head_again_on_fresh_ports(tmp_path, monkeypatch):
    """Ports are chosen free and released; another process may bind one before Ray does. The
    dashboard's port taken made ``ray start`` give up after a minute, with the GCS already
    answering, and a sweep then waited on a job server that never came."""
    import socket

    from ratchet_ray.sweep import ray_head

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real, chosen = ray_head.free_ports, []

    def first_dashboard_port_taken(count: int) -> list[int]:
        ports = real(count)
        if count == 2 and not chosen:  # the GCS and dashboard ports of the first start
            ports[1] = taken.getsockname()[1]
        chosen.append(ports)
        return ports

    monkeypatch.setattr(ray_head, "free_ports", first_dashboard_port_taken)
    try:
        with ray_cluster(1, tmp_path / "head.log", env=_fresh_home(tmp_path)) as joined:
            url = joined["RAY_API_SERVER_ADDRESS"]
            assert url != f"http://127.0.0.1:{taken.getsockname()[1]}"
            import urllib.error
            import urllib.request

            try:  # the job server answers (under token auth, it asks for the token)
                status = urllib.request.urlopen(f"{url}/api/version", timeout=30).status
            except urllib.error.HTTPError as refused:
                status = refused.code
            assert status in (200, 401), status
    finally:
        taken.close()
    starts = [ports for ports in chosen if len(ports) == 2]
    assert len(starts) == 2, "one start on the taken port, one on fresh ports"


def _fake_ray(tmp_path, monkeypatch, said: str, sleep_s: float = 0.0) -> None:
    """``ray`` that prints ``said`` and exits 1 (after ``sleep_s``), never starting a head."""
    import sys

    from ratchet_ray.sweep import ray_head

    script = tmp_path / "fake_ray"
    script.write_text(f"#!{sys.executable}\nimport sys, time\nprint({said!r}, flush=True)\n"
                      f"time.sleep({sleep_s})\nsys.exit(1)\n")
    script.chmod(0o755)
    monkeypatch.setattr(ray_head, "ray_executable", lambda: str(script))


GCS_PORT_TAKEN = (
    "Usage stats collection is disabled.\n\nLocal node IP: 127.0.0.1\nTraceback (most recent "
    "call last):\n  File \"node.py\", line 1025, in _init_gcs_client\nRuntimeError: Failed to "
    "start GCS.  Last 1 lines of error files:\n[2026-12-07 09:38:38,210 C 12791 12791] "
    "(gcs_server) grpc_server.cc:134:  Check failed: server_ Failed to start the grpc server. "
    "The specified port is 57477. If the server startup error message is `Address already in "
    "use`, ...\n.Please check /tmp/rh1/session_x/logs/gcs_server.out for details.\n")


@pytest.mark.parametrize("said, sleep_s, words", [
    (GCS_PORT_TAKEN, 0, ["exited with 1 while starting: port 57477 is in use by another process",
                         "lsof -i :57477"]),
    ("Ray is trying to start at 127.0.0.1:6379, but is already running at 127.0.0.1:6379. "
     "Please specify a different port", 0,
     ["another Ray head already runs at 127.0.0.1:6379", "`ray stop`", "--address 127.0.0.1:6379"]),
    ("Local node IP: 127.0.0.1\nValueError: bad --resources\nsome trailing info line", 0,
     ["its last words: ValueError: bad --resources", "--address"]),
    ("Local node IP: 127.0.0.1", 5, ["did not finish starting within 1s", "too busy"]),
], ids=["gcs-port", "another-head", "other", "slow"])
def test_a_head_that_cannot_start_is_one_line_with_its_cause_fix_and_log(tmp_path, monkeypatch,
                                                                          said, sleep_s, words):
    """It was several lines: the head's log quoted, no fix named."""
    from ratchet_ray.sweep.ray_head import RayHeadError

    _fake_ray(tmp_path, monkeypatch, said, sleep_s)
    log = tmp_path / "logs" / "ray_head.log"
    with pytest.raises(RayHeadError) as failed:
        with ray_cluster(1, log, env=_fresh_home(tmp_path, mode="disabled"), ready_timeout_s=1):
            pass
    message = str(failed.value)
    assert "\n" not in message and message.startswith("the local Ray head ")
    for word in words:
        assert word in message, (word, message)
    assert f"(details: {log}" in message and said.splitlines()[0] in log.read_text()


def test_a_gcs_port_taken_starts_the_head_again_on_fresh_ports(tmp_path, monkeypatch):
    """Ports are chosen free and released; the GCS's may be taken before Ray binds it. That was
    no retry (the dashboard's was): the sweep stopped at its first start."""
    from ratchet_ray.sweep import ray_head

    starts = tmp_path / "starts"
    script = tmp_path / "fake_ray"  # `ray start` whose GCS finds its port taken, every time
    script.write_text(f"#!{sys.executable}\nimport sys\n"
                      f"open({str(starts)!r}, 'a').write(' '.join(a for a in sys.argv[1:] if "
                      "a in ('start', '--head') or a.startswith('--port=')) + '\\n')\n"
                      f"print({GCS_PORT_TAKEN!r}, flush=True)\nsys.exit(1)\n")
    script.chmod(0o755)
    monkeypatch.setattr(ray_head, "ray_executable", lambda: str(script))
    with pytest.raises(ray_head.RayHeadError) as failed:
        with ray_cluster(1, tmp_path / "head.log", env=_fresh_home(tmp_path, mode="disabled")):
            pass
    said = starts.read_text().splitlines()
    assert [line.rsplit(" ", 1)[0] for line in said] == ["start --head"] * ray_head.START_ATTEMPTS
    assert len({line.rsplit("=", 1)[1] for line in said}) == len(said), said  # fresh GCS ports
    assert "port 57477 is in use by another process" in str(failed.value)


@pytest.mark.slow  # two real `ray start`s that fail (a start and one retry): about 80 s
def test_a_gcs_port_taken_is_named_by_a_real_head_and_its_ray_logs_are_kept(tmp_path,
                                                                             monkeypatch):
    """Ray's session folder, which its error points to, was removed with the failed head."""
    import socket

    from ratchet_ray.sweep import ray_head

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port, real = taken.getsockname()[1], ray_head.free_ports

    def gcs_port_taken(count: int) -> list[int]:
        ports = real(count)
        if count == 2:  # the GCS and dashboard ports of a start
            ports[0] = port
        return ports

    monkeypatch.setattr(ray_head, "free_ports", gcs_port_taken)
    monkeypatch.setattr(ray_head, "START_ATTEMPTS", 2)  # one retry on a real head (each ~40 s)
    log = tmp_path / "ray_head.log"
    try:
        with pytest.raises(ray_head.RayHeadError) as failed:
            with ray_cluster(1, log, env=_fresh_home(tmp_path, mode="disabled")):
                pass
    finally:
        taken.close()
    message = str(failed.value)
    assert "\n" not in message, message
    assert f"port {port} is in use by another process" in message, message
    kept = ray_head.session_logs(log)
    assert f"Ray's logs in {kept}" in message and (kept / "gcs_server.out").is_file()


def test_ray_address_local_starts_the_sweeps_own_head(tmp_path, monkeypatch):
    """``RAY_ADDRESS=local`` (docs/cluster.md's way to a Ray of a run's own beside a leftover
    head) was taken for a cluster's address: the sweep made its folder, asked a job server
    "local" for 2 minutes and stopped on Ray's "Found multiple active Ray instances". It means a
    Ray of the caller's own: the head this block starts, which never sees that value."""
    from ratchet_ray.sweep import ray_head

    seen = tmp_path / "seen"
    script = tmp_path / "fake_ray"  # `ray start` recording what it was given, then failing
    script.write_text(f"#!{sys.executable}\nimport os, sys\nopen({str(seen)!r}, 'w').write("
                      "repr((sys.argv[1:3], os.environ.get('RAY_ADDRESS'))))\n"
                      "print('ValueError: no head here', flush=True)\nsys.exit(1)\n")
    script.chmod(0o755)
    monkeypatch.setattr(ray_head, "ray_executable", lambda: str(script))
    env = {**_fresh_home(tmp_path, mode="disabled"), "RAY_ADDRESS": "local"}
    with pytest.raises(ray_head.RayHeadError, match="its last words: ValueError: no head here"):
        with ray_cluster(1, tmp_path / "head.log", env=env):
            pass
    assert seen.read_text() == repr((["start", "--head"], None))
