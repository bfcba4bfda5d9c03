"""Which Ray a driver would reach, checked in a second before anything is created or started.

Ray meets a wrong address slowly: nothing listening is retried for a minute or more, a dead
dashboard URL is retried by the job client, and a head left by ``ray start --head`` is joined by
a plain ``ray.init()``, which then refuses a local run's settings. These checks turn each into
one line naming the address and the fix.

Contracts:
- ``unreachable(address, timeout_s)``: for a ``HOST:PORT`` address or an ``http(s)://HOST:PORT``
  dashboard URL, the one-line reason nothing accepts a TCP connection there within
  ``timeout_s``, else None; other forms (``auto``, ``local``, ``ray://...``) are Ray's (None).
- ``leftover_head()``: the address of a live cluster a plain ``ray.init()`` here would join (the
  address file the last ``ray start --head`` wrote; one a dead head left is ignored), else None.
- ``ray_problem(address)``: what a driver given ``address`` (else ``RAY_ADDRESS``, else a local
  Ray) would meet, one line with the fix, else None: nothing listening (for ``auto``, at the
  address Ray resolves it to here, or no cluster to find), an address of none of
  the forms a driver takes (``garbage``, a host without its port), a head that refuses this
  driver's credentials (``refused_credentials``), a leftover head. ``client=False`` (a sweep,
  which takes no ``ray://`` address): the forms it names leave ``ray://`` out; ``local=False``
  (a sweep's ``--status`` / ``--stop``, which need its cluster): no local Ray is advised.
  ``RAY_ADDRESS=local`` asks for a local Ray of its own even beside a leftover head.
- ``ask_gcs(address, timeout_s)`` / ``gcs_answers``: the GCS's ``check_alive``, bounded even
  where Ray's own call would block for good (a GCS that died).
- ``refused_credentials(address)``: why the head at a ``HOST:PORT`` address refuses this
  driver (Ray's token authentication: no token here, or another), else None, within the
  timeout; ``ray.init`` met it after 20 s of retries with an error naming only an interface
  address it failed to connect to.
"""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlsplit

LOCAL = "local"
"""``RAY_ADDRESS`` / address value that starts a Ray of this process's own, beside any other."""
PROBE_TIMEOUT_S = 3.0


def _host_port(address: str) -> tuple[str, int] | None:
    if address.startswith(("http://", "https://")):
        parts = urlsplit(address)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return None
        return parts.hostname or "127.0.0.1", port
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in address:
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def unreachable(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why nothing accepts a connection at ``address`` (module contract), else None."""
    target = _host_port(address.strip())
    if target is None:
        return None
    try:
        socket.create_connection(target, timeout=timeout_s).close()
    except socket.timeout:
        return f"nothing answered at {address} within {timeout_s:.0f}s"
    except OSError as exc:
        return f"nothing answers at {address} ({exc.strerror or exc})"
    return None


def _malformed(address: str, client: bool = True) -> str | None:
    """Why ``address`` is none of the forms a driver can be given (``HOST:PORT``, a dashboard
    URL, a ``scheme://`` address such as ``ray://``, ``auto``), else None. The forms it advises
    leave out ``ray://`` when the caller takes no Ray Client address (``client=False``)."""
    text = address.strip()
    if "://" in text or text == "auto" or _host_port(text) is not None:
        return None
    return ("it is no Ray address: give HOST:PORT (the head's GCS, e.g. 127.0.0.1:6379), "
            "http://HOST:8265 (its dashboard), " + ("ray://HOST:10001 or auto" if client
                                                      else "or auto on the head"))


def leftover_head() -> str | None:
    """The cluster a plain ``ray.init()`` here would join (module contract), else None."""
    try:
        from ray._private.services import find_bootstrap_address
    except ImportError:  # Ray moved its discovery: a local run starts its own Ray anyway
        return None
    try:
        found = find_bootstrap_address(None)  # what the last `ray start` here recorded
    except OSError:
        return None
    # A head killed without `ray stop` leaves the file behind: only a live one counts.
    if not found or unreachable(found, timeout_s=1.0) is not None:
        return None
    return found


def ray_problem(address: str | None = None, client: bool = True,
                local: bool = True) -> str | None:
    """What reaching Ray would meet, in one line with the fix (module contract), else None.
    ``client=False``: the caller (a sweep) refuses Ray Client addresses, so none is advised;
    ``local=False``: it acts on a cluster only (a sweep's ``--status``), so dropping the address
    for a local Ray is not advised."""
    given = address or os.environ.get("RAY_ADDRESS") or None
    if given == LOCAL:
        return None
    if given is not None:
        target, why = (_auto_target() if given.strip() == "auto"
                       else (given, _malformed(given, client)))
        why = why or (unreachable(target) if target else None)
        if why is None:
            return refused_credentials(target) if target else None
        if target and target != given:
            why = f"auto means {target} here (the cluster Ray finds on this machine), and {why}"
        source, drop = ("--address", "drop --address") if address else \
            ("RAY_ADDRESS", "unset RAY_ADDRESS")
        return (f"cannot reach the Ray cluster at {given} ({source}): {why}; start the head there "
                "(`ray start --head`)" + (", " if local else " or ") + "give its address (`ray "
                "status` on the head prints it)" + (f", or {drop} for a local Ray" if local else ""))
    head = leftover_head()
    if head is None:
        return None
    return (f"a Ray cluster already runs on this machine at {head} (a `ray start --head` left "
            f"running?), and a plain local run would join it; run on it with "
            f"RAY_ADDRESS={head}, start a Ray of this run's own beside it with "
            "RAY_ADDRESS=local, or stop that head (docs/cluster.md, \"A local head\")")


def _auto_target() -> tuple[str | None, str | None]:
    """``(address, None)``: what ``auto`` means to Ray here (the address the last ``ray start
    --head`` recorded, else a GCS running on this machine); ``(None, why)`` when there is none;
    ``(None, None)`` when this Ray cannot say (its own error then stands)."""
    try:
        from ray._private.services import get_ray_address_from_environment
    except ImportError:
        return None, None
    try:
        return get_ray_address_from_environment("auto", None), None
    except ConnectionError:
        return None, "no Ray cluster runs on this machine for auto to find"


def ask_gcs(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, Exception | None]:
    """``check_alive`` on the GCS at ``HOST:PORT``, bounded by ``timeout_s`` even where Ray's
    call blocks (a GCS that died leaves it waiting for good): ``(answered, error)``, where
    ``answered`` is whether it came back in time, and ``error`` what it raised (None: alive)."""
    outcome: list[Exception | None] = []

    def ask() -> None:
        try:
            from ray._raylet import GcsClient

            GcsClient(address=address).check_alive([], timeout=timeout_s)
            outcome.append(None)
        except Exception as exc:  # noqa: BLE001 - the caller reads the class it cares about
            outcome.append(exc)

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(timeout_s)
    return (True, outcome[0]) if outcome else (False, None)


def gcs_answers(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the GCS at ``address`` says it is alive within ``timeout_s``."""
    answered, error = ask_gcs(address, timeout_s)
    return answered and error is None


def refused_credentials(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the head at ``address`` refused this driver's credentials (module contract)."""
    if address.strip().startswith(("http://", "https://")) or _host_port(address.strip()) is None:
        return None
    try:
        from ray.exceptions import AuthenticationError
    except ImportError:  # Ray moved it: Ray's own error stands
        return None
    # A head that checks tokens answers at once; any other failure: Ray's own error stands.
    _, error = ask_gcs(address.strip(), timeout_s)
    if not isinstance(error, AuthenticationError):
        return None
    mode = os.environ.get("RAY_AUTH_MODE") or "unset"
    where = ("RAY_AUTH_TOKEN, or the token file the head made, ~/.ray/auth_token there, copied "
             "here or named by RAY_AUTH_TOKEN_PATH")
    if mode.lower() != "token":
        return (f"the Ray cluster at {address} uses token authentication and this driver does "
                f"not (RAY_AUTH_MODE is {mode}): set RAY_AUTH_MODE=token and give it the "
                f"cluster's token ({where})")
    return (f"the Ray cluster at {address} refuses this driver's auth token: give it the "
            f"cluster's token ({where})")
