"""Every way a user reaches Ray, gone wrong, as a user meets it: a process of its own (``python
-m jobs.skill_loop`` / ``jobs.ablations``), ending in ONE ``Error:`` line naming the address and
the fix within a stated bound (Ray alone retried these for 44 s to minutes, or raised a
traceback), with no run dir or sweep folder made. Then Ctrl-C in the middle of a run: the
round reached, the exact ``--resume`` command and ``stopped.json``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from one_line import process_error_line

from ratchet_ray.sweep.ray_head import free_ports, own_port_flags, ray_executable

ROOT = Path(__file__).resolve().parents[2]
BOUND_S = 30.0
"""Seconds a refusal may take, Python's start and imports on a loaded machine included; Ray's
own retries took 44 s (an address where nothing listens) to 2 minutes (a dead dashboard)."""


def closed_port() -> int:
    """A loopback port nothing listens on (chosen free, then released)."""
    return free_ports(1)[0]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}
    return {**env, **extra}


def refused_within(argv: list[str], cwd: Path, env: dict[str, str], *words: str) -> str:
    """Run ``argv``; it must exit non-zero within ``BOUND_S`` with one ``Error:`` line (holding
    every one of ``words``) and no traceback. Returns that line."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=BOUND_S + 60)
    took = time.monotonic() - started
    line = process_error_line(done, *words)
    assert took < BOUND_S, f"refused after {took:.1f}s (bound {BOUND_S:.0f}s): {line}"
    return line


@pytest.mark.parametrize("job", [["jobs.skill_loop", "sim", "--rounds", "1"],
                                 ["jobs.baseline", "sim", "--limit", "2", "--probes", "1"]],
                         ids=["skill-loop", "baseline"])
def test_ray_address_where_nothing_listens_is_one_line_and_no_run_dir(tmp_path, job):
    address = f"127.0.0.1:{closed_port()}"
    refused_within(["-m", *job, "--set", f"results_dir={tmp_path / 'results'}"], ROOT,
                   _env(RAY_ADDRESS=address), address, "RAY_ADDRESS", "Connection refused",
                   "ray start --head")
    assert not (tmp_path / "results").exists()  # no run dir, no baseline output folder


@pytest.mark.parametrize("job", [["jobs.skill_loop", "sim", "--rounds", "1"],
                                 ["jobs.baseline", "sim", "--limit", "2", "--probes", "1"]],
                         ids=["skill-loop", "baseline"])
def test_a_ray_tmpdir_a_local_ray_cannot_write_is_one_line_and_no_run_dir(tmp_path, job):
    """Ray raised a FileNotFoundError traceback from ``ray.init`` and each try left an empty run
    dir behind."""
    (tmp_path / "a_file").write_text("")
    tmpdir = tmp_path / "a_file" / "ray"
    refused_within(["-m", *job, "--set", f"results_dir={tmp_path / 'results'}"], ROOT,
                   _env(RAY_TMPDIR=str(tmpdir)), f"RAY_TMPDIR={tmpdir}", "is not a folder",
                   "point RAY_TMPDIR at a writable folder")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("scheme", ["", "http://"], ids=["gcs-address", "dashboard-url"])
def test_a_sweep_address_where_nothing_listens_is_one_line_and_no_sweep_folder(tmp_path, scheme):
    address = f"{scheme}127.0.0.1:{closed_port()}"
    out = tmp_path / "sweep"
    refused_within(["-m", "jobs.ablations", "sim", "--arms", "default", "--seeds", "1",
                    "--rounds", "1", "--address", address, "--out", str(out)], ROOT, _env(),
                   address, "--address", "Connection refused")
    assert not out.exists()


def test_the_status_of_a_sweep_on_a_dead_dashboard_is_one_line(tmp_path):
    """The job client alone retried a refused dashboard for two minutes. It is told to reach
    the cluster, not to drop --address for a local Ray: --status without one is refused."""
    address = f"http://127.0.0.1:{closed_port()}"
    sweep = tmp_path / "sweep"  # a sweep's folder: a folder that is no sweep is refused first
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"command": "python -m jobs.ablations sim"}))
    line = refused_within(["-m", "jobs.ablations", "sim", "--address", address, "--status",
                           "--out", str(sweep)], ROOT, _env(), address, "Connection refused",
                          "give its address")
    assert "drop --address" not in line and "local Ray" not in line


@pytest.fixture(params=["disabled"])
def leftover_head(request):
    """A ``ray start --head`` left running, as docs/cluster.md's recipe leaves one, isolated from
    every other test: its own Ray temp folder (``RAY_TMPDIR``: where ``ray start`` records the
    address a plain ``ray.init()`` then joins) and free ports for every service; its
    ``RAY_AUTH_MODE`` the fixture's param (``token``: a token of its own in ``RAY_AUTH_TOKEN``).
    Yields that RAY_TMPDIR; the head is stopped (``--block``: SIGTERM stops what it started)
    afterwards."""
    temp = Path(tempfile.mkdtemp(prefix="rh", dir="/tmp"))  # short: Ray's socket paths
    token = {"RAY_AUTH_TOKEN": os.urandom(16).hex()} if request.param == "token" else {}
    env = _env(RAY_TMPDIR=str(temp), RAY_AUTH_MODE=request.param, **token)
    log = open(temp / "head.log", "w")
    services = own_port_flags()
    taken = {flag.split("=")[1] for flag in services}  # ports chosen apart can repeat
    port = next(p for p in free_ports(8) if str(p) not in taken)
    head = subprocess.Popen(
        [ray_executable(), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
         "--disable-usage-stats", "--include-dashboard=false", "--num-cpus=1",
         f"--port={port}", *services],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address_file = temp / "ray" / "ray_current_cluster"
    try:
        deadline = time.monotonic() + 180
        while not address_file.is_file() and time.monotonic() < deadline:
            assert head.poll() is None, (temp / "head.log").read_text()[-3000:]
            time.sleep(0.5)
        assert address_file.is_file(), "the head did not record its address within 180 s"
        yield temp, address_file.read_text().strip()
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=30)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow  # a Ray head of its own starts (10-30 s); the refusal itself is BOUND_S
def test_a_plain_local_run_beside_a_leftover_head_is_one_line_naming_it(tmp_path, leftover_head):
    """Before: ``ValueError: When connecting to an existing cluster, resources must not be
    provided`` (Ray joined the head and refused the local run's settings)."""
    temp, address = leftover_head
    refused_within(["-m", "jobs.skill_loop", "sim", "--rounds", "1", "--set",
                    f"results_dir={tmp_path / 'results'}"], ROOT, _env(RAY_TMPDIR=str(temp)),
                   address, f"RAY_ADDRESS={address}", "RAY_ADDRESS=local", "docs/cluster.md")
    assert not (tmp_path / "results").exists()


@pytest.mark.slow  # a Ray head of its own starts (10-30 s); the refusal itself is BOUND_S
@pytest.mark.parametrize("leftover_head", ["token"], indirect=True)
def test_joining_a_head_that_checks_tokens_without_one_names_the_token(tmp_path, leftover_head):
    """Before: 20 s of Ray's retries, then "Failed to connect to Ray cluster at <the machine's
    interface address>", naming neither the address given nor the token; a run dir was made
    first. Now one line, before anything is made, naming RAY_AUTH_MODE and where the token goes;
    with a wrong token, that the token is refused."""
    _temp, address = leftover_head
    results = ["--set", f"results_dir={tmp_path / 'results'}"]
    env = {k: v for k, v in _env(RAY_ADDRESS=address).items()
           if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    refused_within(["-m", "jobs.skill_loop", "sim", "--rounds", "1", *results], ROOT, env,
                   address, "token authentication", "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN")
    refused_within(["-m", "jobs.skill_loop", "sim", "--rounds", "1", *results], ROOT,
                   {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 32}, address,
                   "refuses this driver's auth token")
    assert not (tmp_path / "results").exists()


@pytest.mark.slow  # a real sim run on a local Ray, interrupted after its first round
@pytest.mark.parametrize("signum, by, group", [
    (signal.SIGINT, "Ctrl-C / SIGINT", False), (signal.SIGTERM, "SIGTERM", False),
    (signal.SIGTERM, "SIGTERM", True)], ids=["sigint", "sigterm", "sigterm-to-the-group"])
def test_ctrl_c_names_the_round_reached_and_the_exact_resume_command(tmp_path, signum, by, group):
    """SIGTERM (``kill PID``, a scheduler's stop) hit ray.init's handler, which dumped a stack
    and aborted: nothing recorded, no resume named. It unwinds as Ctrl-C now. Sent to the whole
    process group (``timeout``, ``kill -- -PGID``), it stops the local Ray too, and the run's
    release then blocked for good on the dead GCS: nothing recorded, the process never ended."""
    results = tmp_path / "results"
    run = subprocess.Popen(
        [sys.executable, "-m", "jobs.skill_loop", "sim", "--rounds", "30", "--n-train", "10",
         "--n-eval", "10", "--quiet", "--set", f"results_dir={results}"],
        cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=group)
    try:
        deadline = time.monotonic() + 300
        while not list(results.glob("sim/*/round_00/summary.json")):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "round 0 did not finish within 300 s"
            time.sleep(0.5)
        if group:
            os.killpg(run.pid, signum)
        else:
            run.send_signal(signum)
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL) if group else run.kill()
    (run_dir,) = results.glob("sim/*")
    assert run.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "Aborted!" not in err, err[-3000:]
    stopped = json.loads((run_dir / "stopped.json").read_text())
    finished = len(list(run_dir.glob("round_*/summary.json")))
    assert stopped["kind"] == "Interrupted" and stopped["round"] == finished >= 1
    assert stopped["cause"] == f"interrupted ({by}) in round {finished} of 30"
    assert "SIGTERM received" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last == (f"interrupted in round {finished} of 30 ({finished} round(s) finished; "
                    f"recorded in {run_dir / 'stopped.json'}); continue with: "
                    f"python -m jobs.skill_loop --resume {run_dir}"), err[-3000:]
    assert json.loads((run_dir / "loop.json").read_text())["stopped"]["kind"] == "Interrupted"


def test_sigterm_while_the_run_starts_is_recorded_as_an_interrupt(tmp_path):
    """SIGTERM while ray.init started Ray met Ray's own handler (exit 15): no line on stderr,
    nothing recorded, no resume named; before it, Python's default ended the process."""
    results = tmp_path / "results"
    run = subprocess.Popen(
        [sys.executable, "-m", "jobs.skill_loop", "sim", "--rounds", "2", "--n-train", "4",
         "--n-eval", "2", "--quiet", "--set", f"results_dir={results}"],
        cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + BOUND_S
        while not list(results.glob("sim/*/run.log")):  # the run dir is made, Ray not yet up
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.01)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    (run_dir,) = results.glob("sim/*")
    assert run.returncode == 130 and "Traceback" not in err, err[-3000:]
    stopped = json.loads((run_dir / "stopped.json").read_text())
    assert stopped["cause"] == "interrupted (SIGTERM) in round 0 of 2"
    assert err.strip().splitlines()[-1].endswith(
        f"continue with: python -m jobs.skill_loop --resume {run_dir}"), err[-3000:]


_SIGTERM_AS_THE_RUN_DIR_IS_MADE = """
import os, signal, sys
from ratchet_ray.loop.driver import run_loop
from ratchet_ray.loop.stops import RunInterrupted
from ratchet_ray.run_config.files import layered_files, load_config
config = load_config(layered_files("sim"), ["rounds=2", "n_train=4", "n_eval=2",
                                            "results_dir=" + sys.argv[1]])
try:
    run_loop(config, show_progress=False,
             announce=lambda path: os.kill(os.getpid(), signal.SIGTERM))
except RunInterrupted as exc:
    print(exc)
    sys.exit(130)
"""


def test_sigterm_as_the_run_dir_is_made_is_recorded_as_an_interrupt(tmp_path):
    """A SIGTERM between the run dir's making and the run's own handling of it (announced at
    once, before Ray): held back, then recorded as a stop in round 0, which a resume continues.
    Before, the default action ended the process there: nothing recorded (the race the test
    above met on a loaded machine when its signal came in that window)."""
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-c", _SIGTERM_AS_THE_RUN_DIR_IS_MADE, str(results)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, (done.returncode, done.stderr[-3000:])
    (run_dir,) = results.glob("sim/*")
    stopped = json.loads((run_dir / "stopped.json").read_text())
    assert stopped["cause"] == "interrupted (SIGTERM) in round 0 of 2"
    assert done.stdout.startswith("interrupted in round 0 of 2 (0 finished)"), done.stdout


_SIGTERM_SWALLOWED_IN_RAY_INIT = """
import signal, sys
import ray
from ratchet_ray.loop.session import ray_session

real_init = ray.init


class SignalledInDel:  # a signal handler run in __del__ (or an at-fork hook): its raise is lost
    def __del__(self):
        signal.raise_signal(signal.SIGTERM)


def init(*args, **kwargs):
    connected = real_init(*args, **kwargs)
    SignalledInDel()  # Ray's handler's SystemExit: "Exception ignored", and ray.init goes on
    return connected


ray.init = init
try:
    with ray_session():
        print("went on")
except KeyboardInterrupt as exc:
    print("interrupted", exc, ray.is_initialized())
"""


def test_a_sigterm_swallowed_while_ray_starts_still_interrupts():
    """CI met it: SIGTERM during ray.init ran Ray's handler inside logging's at-fork hook, where
    Python ignores the handler's SystemExit; the run went on and finished (exit 0, nothing
    recorded). The wakeup pipe notes the signal below Python, so the session unwinds as Ctrl-C
    once Ray is up, and Ray is shut down."""
    done = subprocess.run([sys.executable, "-c", _SIGTERM_SWALLOWED_IN_RAY_INIT], cwd=ROOT,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "interrupted SIGTERM False", (done.stdout, done.stderr[-3000:])
    assert "Exception ignored" in done.stderr  # the swallowing is real, not a raise that got out


_STOP_LOST_IN_A_PHASE = """
import dataclasses, signal, sys
from ratchet_ray.loop import driver
from ratchet_ray.loop.stops import RunInterrupted
from ratchet_ray.run_config.files import layered_files, load_config

how = sys.argv[2]
signal.signal(signal.SIGINT, signal.default_int_handler)  # as jobs.skill_loop: a test worker's
# children may start with SIGINT ignored, and the run leaves an ignored Ctrl-C alone


class SignalledInDel:  # a signal handler run in __del__ (or an at-fork hook): its raise is lost
    def __del__(self):
        signal.raise_signal(signal.SIGTERM if how == "swallowed-sigterm" else signal.SIGINT)


def losing(phase):
    def run(ctx, round_, summary):
        if round_ == 1 and how == "duckdb-sigint":  # what DuckDB raises for Ctrl-C in a query
            raise RuntimeError("Query interrupted")
        note = phase.run(ctx, round_, summary)
        if round_ == 1 and how != "duckdb-sigint":
            SignalledInDel()
        return note
    return dataclasses.replace(phase, run=run)


lost_in = "synth" if how == "duckdb-sigint" else "train"  # a soft phase, a critical one
driver.ROUND_PHASES = tuple(losing(p) if p.name == lost_in else p for p in driver.ROUND_PHASES)
config = load_config(layered_files("sim"), ["rounds=3", "n_train=4", "n_eval=2",
                                            "results_dir=" + sys.argv[1]])
try:
    driver.run_loop(config, show_progress=False)
except RunInterrupted as exc:
    print(exc)
    sys.exit(130)
"""


@pytest.mark.parametrize("how, by", [
    ("swallowed-sigterm", "SIGTERM"), ("swallowed-sigint", "Ctrl-C / SIGINT"),
    ("duckdb-sigint", "Ctrl-C / SIGINT")])
def test_a_stop_lost_in_a_phase_stops_the_run_at_the_next_phase(tmp_path, how, by):
    """A stop's KeyboardInterrupt lost mid-round: swallowed by Python (the run's own SIGTERM
    handler, or Ctrl-C's, run in a ``__del__``), or turned by DuckDB into its "Query
    interrupted" error (raised here as DuckDB raises it), which the soft synth phase recorded as
    its failure (the full suite met it: a Ctrl-C'd run went on to its 30th round, exit 0). The
    run stops at once or before the next phase; the stop is recorded in that round, and a
    resume is named."""
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-c", _STOP_LOST_IN_A_PHASE, str(results), how],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=180)
    assert done.returncode == 130, (done.returncode, done.stderr[-3000:])
    if how != "duckdb-sigint":
        assert "Exception ignored" in done.stderr, done.stderr[-3000:]
    (run_dir,) = results.glob("sim/*")
    stopped = json.loads((run_dir / "stopped.json").read_text())
    assert stopped["cause"] == f"interrupted ({by}) in round 1 of 3", stopped
    assert [p.parent.name for p in run_dir.glob("round_*/summary.json")] == ["round_00"]
    assert done.stdout.startswith("interrupted in round 1 of 3 (1 finished)"), done.stdout
    if how == "duckdb-sigint":  # at once: no later phase of the round ran
        assert "round 1: curate" not in (run_dir / "run.log").read_text()


def test_an_interrupt_is_recorded_with_the_round_it_came_in(tmp_path):
    """The record the Ctrl-C test above reads, without a run: rounds 0 and 1 finished, so the
    interrupt came in round 2."""
    from ratchet_ray.loop.stops import record_interrupt
    from ratchet_ray.loop.rundir import RunDir
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.types import RoundSummary

    config = LoopConfig(rounds=5, results_dir=str(tmp_path))
    run = RunDir.create(config, ["t1"], ["e1"])
    for round_ in (0, 1):
        run.write_summary(RoundSummary(round=round_))
    raised = record_interrupt(run, config)
    assert isinstance(raised, KeyboardInterrupt)  # unwinds as Ctrl-C wherever it is not known
    assert (raised.run_dir, raised.round, raised.finished, raised.rounds) == (run.path, 2, 2, 5)
    stopped = json.loads((run.path / "stopped.json").read_text())
    assert (stopped["kind"], stopped["round"]) == ("Interrupted", 2)
    assert stopped["cause"] == "interrupted (Ctrl-C / SIGINT) in round 2 of 5"
    loop = json.loads((run.path / "loop.json").read_text())
    assert loop["stopped"] == stopped and [r["round"] for r in loop["rounds"]] == [0, 1]


def test_a_ray_address_of_no_known_form_is_one_line_and_no_run_dir(tmp_path):
    """``RAY_ADDRESS=garbage`` is neither HOST:PORT, a URL nor ``auto``: named before the run
    dir is made (Ray's own "Invalid address format" came after it, leaving results/ behind)."""
    refused_within(["-m", "jobs.skill_loop", "sim", "--rounds", "1", "--set",
                    f"results_dir={tmp_path / 'results'}"], ROOT, _env(RAY_ADDRESS="garbage"),
                   "garbage (RAY_ADDRESS)", "no Ray address", "HOST:PORT", "unset RAY_ADDRESS")
    assert not (tmp_path / "results").exists()


def test_the_address_forms_ray_takes_are_left_to_ray(monkeypatch):
    from ratchet_ray.loop.ray_address import ray_problem

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with socket.socket() as live:  # a Ray Client address something listens at: Ray's to reach
        live.bind(("127.0.0.1", 0))
        live.listen()
        for address in ("local", f"ray://127.0.0.1:{live.getsockname()[1]}"):
            assert ray_problem(address) is None, address
    assert "no Ray address" in ray_problem("127.0.0.1")  # no port: Ray refuses it too


def test_a_ray_client_address_where_nothing_listens_is_refused_at_once(monkeypatch):
    """Ray Client retried it for 30 s (a UserWarning, then "ray client connection timeout"),
    after the run dir was made; now the probe every HOST:PORT gets, ray://'s default port
    10001 when none is given."""
    from ratchet_ray.loop import ray_address

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    address = f"ray://127.0.0.1:{closed_port()}"
    line = ray_address.ray_problem(address)
    assert f"cannot reach the Ray cluster at {address} (--address)" in line
    assert "nothing answers" in line and "Connection refused" in line, line
    assert ray_address._host_port("ray://head") == ("head", 10001)


@pytest.mark.parametrize("address", ["http://[::1", "http://127.0.0.1:port", "https://h:x"])
def test_a_url_whose_host_or_port_cannot_be_read_is_no_ray_address(monkeypatch, address):
    """urlsplit's ValueError ("Invalid IPv6 URL", "Port could not be cast") was a traceback of
    every command given such an address (a run, a sweep); now the malformed-address line."""
    from ratchet_ray.loop.ray_address import ray_problem

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for client in (True, False):  # a run's words and a sweep's
        line = ray_problem(address, client=client)
        assert f"at {address} (--address): it is no Ray address" in line, line


def test_auto_is_checked_where_ray_resolves_it(monkeypatch, tmp_path):
    """``RAY_ADDRESS=auto`` joins the address the last ``ray start --head`` recorded: one left by
    a head that is gone made ``ray.init`` retry it for minutes after the run dir was made (seen
    with a stale record naming another host). Now one line naming what auto meant; with no
    cluster to find, one line too (Ray's own error came after the run dir)."""
    from ray._private import services

    from ratchet_ray.loop.ray_address import ray_problem

    monkeypatch.setattr(services, "find_gcs_addresses", lambda: [])  # no other GCS of this host
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    none = ray_problem()
    assert "at auto (RAY_ADDRESS)" in none and "no Ray cluster runs on this machine" in none
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(dead + "\n")
    stale = ray_problem()
    assert f"auto means {dead} here" in stale and "nothing answers" in stale, stale
    assert "unset RAY_ADDRESS" in stale
    with socket.socket() as live:  # something answers there: Ray's own checks go on
        live.bind(("127.0.0.1", 0))
        live.listen()
        host, port = live.getsockname()
        (tmp_path / "ray" / "ray_current_cluster").write_text(f"{host}:{port}\n")
        monkeypatch.setattr("ratchet_ray.loop.ray_address.gcs_problem", lambda a, **_: None)
        assert ray_problem() is None


def test_the_forms_advised_are_those_the_caller_takes(monkeypatch):
    """A single run takes ``ray://`` (Ray Client) and is told so; a sweep refuses it, so its
    refusal of a malformed address must not advise it (it did: the same words for both)."""
    from ratchet_ray.loop.ray_address import ray_problem

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    run, sweep = ray_problem("garbage"), ray_problem("garbage", client=False)
    assert "ray://HOST:10001" in run and "http://HOST:8265" in run
    assert "ray://" not in sweep and "http://HOST:8265" in sweep and "HOST:PORT" in sweep


@pytest.fixture
def http_port():
    """A loopback HTTP server's port (as a dashboard's is), served from a thread."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_dashboard_port_given_as_a_gcs_address_is_one_line_and_no_run_dir(tmp_path, http_port):
    """``RAY_ADDRESS=HOST:8265`` (the dashboard's port without http://): ray.init waited on it
    for minutes ("Failed to connect to GCS ... Timed out while waiting for GCS") after the run
    dir was made; now one line naming an HTTP server and the GCS address to give."""
    address = f"127.0.0.1:{http_port}"
    refused_within(["-m", "jobs.skill_loop", "sim", "--rounds", "1", "--set",
                    f"results_dir={tmp_path / 'results'}"], ROOT, _env(RAY_ADDRESS=address),
                   f"{address} (RAY_ADDRESS) is an HTTP server, not Ray's GCS",
                   f"http://{address} is for `ray job submit`", "HOST:6379")
    assert not (tmp_path / "results").exists()


def test_a_dashboard_url_given_to_a_run_is_one_line_and_no_run_dir(tmp_path):
    """``RAY_ADDRESS=http://HOST:8265`` (what Ray's docs export for its job CLI): ray.init
    refused it with "Invalid Ray address" only after the run dir was made; now before, naming
    the GCS address and ``ray job submit`` with that URL."""
    address = f"http://127.0.0.1:{closed_port()}"
    refused_within(["-m", "jobs.skill_loop", "sim", "--rounds", "1", "--set",
                    f"results_dir={tmp_path / 'results'}"], ROOT, _env(RAY_ADDRESS=address),
                   f"{address} (RAY_ADDRESS) is a Ray dashboard (job server) URL", "HOST:6379",
                   f"ray job submit --address {address}")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("argv, command", [
    (["-m", "jobs.baseline", "sim", "--limit", "1"], "python -m jobs.baseline"),
    ([str(Path(sys.executable).with_name("ratchet")), "swe", "validate", "--dataset",
      "instances.jsonl"], "ratchet swe validate")], ids=["baseline", "swe-validate"])
def test_a_dashboard_url_names_the_command_run_for_ray_job_submit(tmp_path, argv, command):
    """The advice to submit the command to that job server named ``python -m jobs.skill_loop``
    whatever was run (``swe validate`` also said --address for RAY_ADDRESS)."""
    import importlib.util

    fixture = ROOT / "tests" / "suites" / "swebench" / "swebench_instances.py"
    spec = importlib.util.spec_from_file_location("swebench_instances", fixture)
    instances = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(instances)  # the local SWE-bench instances (no Docker needed here)
    (tmp_path / "instances.jsonl").write_text(
        "".join(json.dumps(i) + "\n" for i in instances.make_instances()))
    address = f"http://127.0.0.1:{closed_port()}"
    line = refused_within([*argv, "--set", f"results_dir={tmp_path / 'results'}"], tmp_path,
                          _env(RAY_ADDRESS=address, PYTHONPATH=str(ROOT)),
                          f"{address} (RAY_ADDRESS) is a Ray dashboard (job server) URL",
                          f"-- {command} ...`)")
    assert "jobs.skill_loop" not in line, line
    assert not (tmp_path / "results").exists()


def test_a_port_that_speaks_grpc_or_another_protocol_is_no_gcs(monkeypatch):
    """A raylet's or Ray Client's port (gRPC, UNIMPLEMENTED for the GCS's call) and another
    program's (a banner) were joined by ray.init for minutes; a silent listener is left to Ray
    (a GCS may be slow), and so is a real GCS (``test_cluster``'s runs join one)."""
    import threading
    from concurrent import futures

    import grpc

    from ratchet_ray.loop.ray_address import not_a_gcs, ray_problem

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))  # no service: every call
    port = server.add_insecure_port("127.0.0.1:0")                   # is UNIMPLEMENTED
    server.start()
    try:
        line = ray_problem(f"127.0.0.1:{port}")
    finally:
        server.stop(0)
    assert f"127.0.0.1:{port} (--address) answers gRPC but is not Ray's GCS" in line, line
    with socket.socket() as other, socket.socket() as silent:
        for sock in (other, silent):
            sock.bind(("127.0.0.1", 0))
            sock.listen()

        def banner() -> None:
            conn, _ = other.accept()
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
            conn.close()

        threading.Thread(target=banner, daemon=True).start()
        address = "127.0.0.1:%d" % other.getsockname()[1]
        assert "answers, but not as Ray's GCS" in not_a_gcs(address, False, None, "RAY_ADDRESS")
        assert not_a_gcs("127.0.0.1:%d" % silent.getsockname()[1], False, None) is None
