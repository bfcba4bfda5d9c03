"""The sweep's local Ray head on a machine that has never run Ray: no ``~/.ray/auth_token``."""

from __future__ import annotations

import os

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
