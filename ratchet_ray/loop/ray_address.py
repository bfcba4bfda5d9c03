"""Which Ray a driver would reach, checked in a second before anything is created or started.

Ray meets a wrong address slowly: nothing listening is retried for a minute or more, a dead
dashboard URL is retried by the job client, and a head left by ``ray start --head`` is joined by
a plain ``ray.init()``, which then refuses a local run's settings. These checks turn each into
one line naming the address and the fix.

Contracts:
- ``unreachable(address, timeout_s)``: for a ``HOST:PORT`` address, an ``http(s)://HOST:PORT``
  dashboard URL or a ``ray://HOST:PORT`` Ray Client address (``URL_PORTS``: the default
  ports), the one-line reason nothing accepts a TCP connection there within ``timeout_s``, else
  None; other forms (``auto``, ``local``) are Ray's (None). Ray Client retried a ``ray://``
  where nothing listens for 30 s, after the run dir was made.
- ``leftover_head()``: the address of a live cluster a plain ``ray.init()`` here would join (the
  address file the last ``ray start --head`` wrote; one a dead head left is ignored), else None.
- ``ray_problem(address)``: what a driver given ``address`` (else ``RAY_ADDRESS``, else a local
  Ray) would meet, one line with the fix, else None: nothing listening (for ``auto``, at the
  address Ray resolves it to here, or no cluster to find), an address of none of
  the forms a driver takes (``garbage``, a host without its port, a URL whose host or port
  cannot be read), a head that refuses this driver's credentials or a port that is no Ray GCS
  (``gcs_problem``), a leftover head. ``client=False`` (a sweep,
  which takes no ``ray://`` address): the forms it names leave ``ray://`` out; ``local=False``
  (a sweep's ``--status`` / ``--stop``, which need its cluster): no local Ray is advised.
  ``RAY_ADDRESS=local`` asks for a local Ray of its own even beside a leftover head.
- ``ask_gcs(address, timeout_s)`` / ``gcs_answers``: the GCS's ``check_alive``, bounded even
  where Ray's own call would block for good (a GCS that died).
- ``gcs_problem(address)``: within seconds, why the service at a ``HOST:PORT`` address that
  accepts connections will not take this driver, else None: its head refuses this driver's
  credentials (``refused_credentials``: Ray's token authentication, no token here or another;
  ``ray.init`` met it after 20 s of retries with an error naming only an interface address it
  failed to connect to), or it is no Ray GCS (``not_a_gcs``: an HTTP server such as the
  dashboard's port, another Ray service's gRPC port, another program; ``ray.init`` waited on
  it for minutes). A service that stays silent, or speaks gRPC yet answers slowly, is left to
  Ray.
"""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlsplit

LOCAL = "local"
"""``RAY_ADDRESS`` / address value that starts a Ray of this process's own, beside any other."""
PROBE_TIMEOUT_S = 3.0


URL_PORTS = {"http": 80, "https": 443, "ray": 10001}
"""The schemes whose ``scheme://HOST[:PORT]`` addresses are probed, with Ray's default ports."""


def _host_port(address: str) -> tuple[str, int] | None:
    scheme = address.partition("://")[0] if "://" in address else None
    if scheme in URL_PORTS:
        try:  # urlsplit refuses a broken IPv6 host ("http://[::1") with a ValueError too
            parts = urlsplit(address)
            port = parts.port or URL_PORTS[scheme]
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
    if _host_port(text) is not None or text == "auto" or (
            "://" in text and text.partition("://")[0] not in URL_PORTS):
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
        source, drop = ("--address", "drop --address") if address else \
            ("RAY_ADDRESS", "unset RAY_ADDRESS")
        if why is None:
            return gcs_problem(target, source=source) if target else None
        if target and target != given:
            why = f"auto means {target} here (the cluster Ray finds on this machine), and {why}"
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


def gcs_problem(address: str, timeout_s: float = PROBE_TIMEOUT_S,
                source: str = "") -> str | None:
    """What the service at a ``HOST:PORT`` address that accepts connections says to this
    driver, one line (module contract): it refuses its credentials (``refused_credentials``'s
    words), or it is no Ray GCS (``not_a_gcs``, naming ``source``: where the address came
    from), else None."""
    text = address.strip()
    if "://" in text or _host_port(text) is None:
        return None
    try:
        from ray.exceptions import AuthenticationError
    except ImportError:  # Ray moved it: Ray's own error stands
        return None
    # A head answers at once (a token it checks too); what did not answer may only be slow
    answered, error = ask_gcs(text, timeout_s)
    if answered and isinstance(error, AuthenticationError):
        return refused_credentials(text)
    return not_a_gcs(text, answered, error, source)


def refused_credentials(address: str) -> str:
    """Why the head at ``address``, which refused this driver's token, refused it (module
    contract): no token mode here, or another token."""
    mode = os.environ.get("RAY_AUTH_MODE") or "unset"
    where = ("RAY_AUTH_TOKEN, or the token file the head made, ~/.ray/auth_token there, copied "
             "here or named by RAY_AUTH_TOKEN_PATH")
    if mode.lower() != "token":
        return (f"the Ray cluster at {address} uses token authentication and this driver does "
                f"not (RAY_AUTH_MODE is {mode}): set RAY_AUTH_MODE=token and give it the "
                f"cluster's token ({where})")
    return (f"the Ray cluster at {address} refuses this driver's auth token: give it the "
            f"cluster's token ({where})")


GRPC_UNIMPLEMENTED = 12
"""gRPC's status for a method the server does not have: a Ray service that is not the GCS."""
FIX_GCS = ("give the head's GCS address (HOST:6379 by default; `ray status` on the head prints "
           "it)")


def not_a_gcs(address: str, answered: bool, error: Exception | None,
              source: str = "") -> str | None:
    """Why the service at ``address`` (which accepts connections) is no Ray GCS, given what it
    answered ``ask_gcs`` (``answered``, ``error``), else None (a GCS, or one only slow to
    answer: Ray's own error stands). Ray's driver waited on such a port for minutes, after the
    run dir was made."""
    named = f"{address} ({source})" if source else address
    if answered and getattr(error, "rpc_code", None) == GRPC_UNIMPLEMENTED:
        return (f"something at {named} answers gRPC but is not Ray's GCS (a raylet's, an "
                f"object manager's or the Ray Client server's port?): {FIX_GCS}")
    if answered:
        return None
    first = _first_reply(address)
    if first.startswith(b"HTTP/"):
        return (f"{named} is an HTTP server, not Ray's GCS (the dashboard's port, 8265 by "
                f"default? its URL http://{address} is for `ray job submit` and a sweep's "
                f"--address): {FIX_GCS}")
    if first and not first.startswith(HTTP2_SETTINGS):
        return (f"the service at {named} answers, but not as Ray's GCS (another program's "
                f"port?): {FIX_GCS}")
    return None  # silent, or gRPC yet slow: Ray decides


HTTP2_SETTINGS = b"\x00\x00"
"""How a gRPC server's first frame (HTTP/2 SETTINGS, a short length) starts."""


def _first_reply(address: str, timeout_s: float = 2.0) -> bytes:
    """The first bytes the service at ``HOST:PORT`` sends back to an HTTP/1.0 request (empty
    when it says nothing within ``timeout_s`` or closes)."""
    target = _host_port(address)
    if target is None:
        return b""
    try:
        with socket.create_connection(target, timeout=timeout_s) as conn:
            conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return conn.recv(16)
    except OSError:
        return b""
