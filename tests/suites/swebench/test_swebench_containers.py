"""Locked-down SWE-bench containers on the local images (issue 8, item 4): capabilities, privileges,
CPU and disk bounds, leftover processes, atomic reports, the reaper and the per-image lock."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ratchet_ray.suites.swebench.settings import GradingLimits
from ratchet_ray.suites.swebench.docker.container import (
    HARNESS_CAPS, OWNER_KEY, RUN_KEY, instance_container, orphaned_containers, reap_containers)
from ratchet_ray.suites.swebench.docker.execbox import LINGER_S
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.grading_support import SKIPPED_STEP, apply_steps, inline_patch
from ratchet_ray.suites.swebench.docker.images import InstanceImages, image_name
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from suite_containers import leftover_containers
from waiting import wait_for

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def calc1_image(docker_client, instances, local_settings):
    images = InstanceImages(docker_client, local_settings)
    return images.ensure(next(i for i in instances if i["instance_id"] == "ratchet__calc-1"),
                         lambda _m: None)


def test_the_container_is_locked_down(docker_client, calc1_image, local_settings):
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings,
                            run_label="run-a") as box:
        box.container.reload()
        host = box.container.attrs["HostConfig"]
        assert host["CapDrop"] == ["ALL"] and host["NetworkMode"] == "none"
        assert {c.removeprefix("CAP_") for c in host["CapAdd"]} == set(HARNESS_CAPS)
        assert "no-new-privileges:true" in host["SecurityOpt"]
        assert host["NanoCpus"] == int(local_settings.cpus * 1e9)
        assert host["Memory"] == local_settings.memory_mb * 2**20
        assert host["PidsLimit"] == local_settings.pids_limit
        labels = box.container.labels
        assert labels[RUN_KEY] == "run-a" and labels[OWNER_KEY].endswith(f"/{os.getpid()}")
        status = box.run("grep -E '^(NoNewPrivs|CapEff)' /proc/self/status", 30).output
        # CHOWN(0) DAC_OVERRIDE(1) FOWNER(3) KILL(5) SETGID(6) SETUID(7): 0xeb, nothing else.
        assert "NoNewPrivs:\t1" in status and "CapEff:\t00000000000000eb" in status, status
        quota = box.run("cat /sys/fs/cgroup/cpu.max 2>/dev/null || "
                        "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us",
                        30).output.split()
        assert int(quota[0]) / int(quota[1]) == pytest.approx(local_settings.cpus), quota
        assert box.run("mount -t tmpfs none /mnt", 30).exit_code != 0, "no CAP_SYS_ADMIN"
        assert box.run("ls /sys/class/net", 30).output.split() == ["lo"]
        assert box.become_untrusted(whole_repo=True)
        assert box.run("id -u", 30).output.strip() == str(local_settings.untrusted_uid)
        assert box.run("touch calc/new.py && touch /etc/owned", 30).exit_code != 0
        assert box.run("test -e calc/new.py", 30).exit_code == 0, "the repository is writable"


def test_processes_left_running_are_the_models_not_infra(docker_client, calc1_image, local_settings):
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings) as box:
        started = time.monotonic()
        # The sleep inherits the output. Some daemons close the stream when the command exits,
        # others only when the sleep does: then it is killed LINGER_S after the exit.
        left = box.run("sleep 300 & echo started", 60)
        assert (left.exit_code, left.timed_out, left.output) == (0, False, "started\n")
        assert time.monotonic() - started < 10 + LINGER_S
        started = time.monotonic()
        # Its own session: out of timeout(1)'s reach; the model's timeout, not exec_hung.
        escaped = box.run("setsid sleep 300 & sleep 100", 3)
        assert escaped.timed_out and time.monotonic() - started < 20
        assert int(box.run("cat /proc/[0-9]*/comm | grep -c '^sleep$'", 30).output) >= 1
        box.kill_all()
        assert box.run("cat /proc/[0-9]*/comm | grep -c '^sleep$'", 30).output.strip() == "0"
        assert box.run("echo alive", 30).output.strip() == "alive"


def test_a_host_limit_kills_unseen_by_the_container(docker_client, calc1_image, local_settings):
    """``host_limit_s`` (the instance deadline left) stops the command like its own limit, and
    no process of the container sees it: ``timeout``'s argument is the command's limit."""
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings) as box:
        started = time.monotonic()
        result = box.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '; sleep 100", 60, host_limit_s=3)
        assert result.timed_out and time.monotonic() - started < 20, result
        assert "timeout -s KILL 60 " in result.output and " 3 " not in result.output, result.output
        assert box.run("echo alive", 30, host_limit_s=120).output.strip() == "alive"


def test_disk_budget_kills_a_writer(docker_client, calc1_image, local_settings):
    local_settings.disk_mb = 40
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings) as box:
        started = time.monotonic()
        result = box.run("for i in $(seq 200); do head -c 2M /dev/zero > /tmp/f$i; sleep 0.05; done",
                         120)
        assert result.disk_exceeded and not result.timed_out, result
        assert time.monotonic() - started < 60


def _ops_import(lines: str) -> str:
    """Gold fix of calc-1 plus ``lines`` run when calc.ops is imported (during the tests)."""
    added = lines.count("\n")
    return (f"diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
            f"@@ -1,7 +1,{7 + added} @@\n \"\"\"Tiny arithmetic helpers.\"\"\"\n{lines} \n \n"
            f" def add(a, b):\n-    return a - b\n+    return a + b\n \n \n def mul(a, b):\n")


def test_grading_a_patch_that_leaves_a_process_or_fills_the_disk(docker_client, tasks,
                                                                 local_settings, tmp_path):
    limits = GradingLimits(timeout_s=30, instance_deadline_s=200)
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    daemon = _ops_import("+import subprocess\n+subprocess.Popen(['sleep', '300'], start_new_session=True)\n")
    result = grader.grade(tasks["ratchet__calc-1"], daemon)
    assert result.passed and result.duration_s < 30, result.trace
    local_settings.disk_mb = 40
    filler = _ops_import("+open('/tmp/blob', 'wb').write(b'0' * (60 << 20))\n")
    full = SwebenchGrader(local_settings, limits, tmp_path / "disk", client=docker_client).grade(
        tasks["ratchet__calc-1"], filler)
    assert (full.passed, full.exit_status, full.infra_failure) == (False, "disk_budget_exceeded", False)


def test_a_truncated_report_is_graded_again(docker_client, tasks, gold, local_settings, limits,
                                            tmp_path):
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    first = grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"])
    report = Path(first.trace.rsplit("log: ", 1)[1].strip()) / "report.json"
    text = report.read_text()
    report.write_text(text[: len(text) // 2])
    again = grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"])
    assert again.passed and "cached report" not in again.trace
    assert json.loads(report.read_text())["grade"]["passed"] is True
    assert [p.name for p in report.parent.iterdir() if p.name.startswith(".report-")] == []


HOLDER = """
import sys, time
sys.path[:0] = {paths!r}
import docker
from ratchet_ray.suites.swebench.docker.container import instance_container
from ratchet_ray.suites.swebench.docker.images import InstanceImages
from ratchet_ray.suites.swebench.settings import SwebenchSettings
import swebench_instances
settings = SwebenchSettings(namespace=None, cache_level="instance", memory_mb=256)
client = docker.from_env()
instance = [i for i in swebench_instances.make_instances() if i["instance_id"] == "ratchet__calc-1"][0]
with InstanceImages(client, settings).use(instance, print) as image:
    {body}
"""


def _holder(body: str) -> subprocess.Popen:
    paths = [str(ROOT), str(ROOT / "tests" / "suites" / "swebench")]
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(paths=paths, body=body)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_the_reaper_removes_containers_of_dead_owners_and_of_the_run(docker_client, calc1_image,
                                                                     local_settings, tmp_path):
    proc = _holder("with instance_container(client, image, 'ratchet__calc-1', settings):\n"
                   "        print('ready', flush=True); time.sleep(600)")
    try:
        left = leftover_containers(docker_client)
        assert len(left) == 1
    finally:
        proc.send_signal(signal.SIGKILL)  # no `finally` runs in a killed actor either
        proc.wait()
    assert leftover_containers(docker_client) == left, "the killed owner leaked its container"
    assert reap_containers(docker_client) == left and leftover_containers(docker_client) == []

    grader = SwebenchGrader(local_settings, GradingLimits(), tmp_path, client=docker_client)
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings,
                            run_label="another-run"):
        with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings,
                                run_label=grader.run_label) as mine:
            assert grader.reap() == [mine.name]  # live owner, this run: the end of a round
            assert len(leftover_containers(docker_client)) == 1


def test_doctor_names_only_containers_whose_owner_died(docker_client, calc1_image, local_settings):
    """A live run's container is counted, never offered for removal (parallel ablation arms share
    a daemon); once its owner is killed, the check fails and its command names that container."""
    from ratchet_ray.suites.swebench.doctor import check_environment

    def leftover_check():
        (check,) = [c for c in check_environment(local_settings) if c.name == "leftover containers"]
        return check

    proc = _holder("with instance_container(client, image, 'ratchet__calc-1', settings):\n"
                   "        print('ready', flush=True); time.sleep(600)")
    try:
        (live,) = [name for name in leftover_containers(docker_client)
                   if _owner_pid(docker_client, name) == proc.pid]
        assert live not in orphaned_containers(docker_client)[0]
        check = leftover_check()
        assert live not in check.detail
        assert "of live runs or other hosts, left alone" in check.detail
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    check = leftover_check()
    assert not check.ok and "left by dead processes: docker rm -f" in check.detail
    assert live in check.detail
    reap_containers(docker_client)
    assert live not in leftover_containers(docker_client)


def _owner_pid(client, name: str) -> int:
    return int(client.containers.get(name).labels[OWNER_KEY].rpartition("/")[2])


def test_a_workers_grader_warms_up_as_it_starts(docker_client, calc1_image, local_settings,
                                               limits, tmp_path):
    """The grader a worker makes (``make_grader``) connects in the background as it starts: it
    reaps what a dead grader left, which the first grade used to do before its instance, with
    no grade and no call made."""
    from types import SimpleNamespace

    from ratchet_ray.suites.swebench import SwebenchSuite

    before = set(leftover_containers(docker_client))  # (other work on this machine has some)
    proc = _holder("with instance_container(client, image, 'ratchet__calc-1', settings):\n"
                   "        print('ready', flush=True); time.sleep(600)")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (dead,) = set(leftover_containers(docker_client)) - before
    config = SimpleNamespace(suite="swebench", grader=limits,
                             suite_settings={"swebench": local_settings.model_dump()})
    grader = SwebenchSuite().make_grader(config, tmp_path)
    wait_for(lambda: dead not in leftover_containers(docker_client), 120,
             "the warm-up to reap the dead grader's container")
    assert grader.warm([]) == {}  # the warm-up has ended


def test_one_lock_per_image_between_agent_and_grader(docker_client, calc1_image, tmp_path):
    proc = _holder("print('ready', flush=True); time.sleep(600)")  # an agent using the image
    remover = InstanceImages(docker_client, SwebenchSettings(namespace=None, cache_level="none"))
    remover.prior.discard(calc1_image)  # as if this grader had built it
    try:
        assert not remover.release(calc1_image, lambda _m: None)
        assert remover.exists(calc1_image), "an image in use elsewhere is kept"
    finally:
        proc.terminate()
        proc.wait()
    assert remover.release(calc1_image, lambda _m: None) and not remover.exists(calc1_image)
    assert image_name("ratchet__calc-1", SwebenchSettings(namespace=None)) == calc1_image


def test_the_end_of_a_round_reaps_on_every_grader(ray_local, docker_client, calc1_image,
                                                  local_settings, limits, tmp_path):
    from types import SimpleNamespace

    from actors.grader import GraderWorker
    from ratchet_ray.loop.grade_pool import reap_after_round

    ray = ray_local
    actor = ray.remote(GraderWorker).options(num_cpus=0.25).remote(
        SimpleNamespace(suite="swebench", suite_settings={"swebench": local_settings.model_dump()},
                        grader=limits), str(tmp_path))
    run_label = str(tmp_path.resolve())
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings,
                            run_label=run_label) as leaked:
        assert reap_after_round(SimpleNamespace(actors=[actor])) == [leaked.name]
    assert leftover_containers(docker_client) == []
    ray.kill(actor)


def test_files_go_in_and_come_out_in_one_archive_each(docker_client, calc1_image, local_settings):
    """``put_files``: root-owned files at their modes in one put, folders made on the way;
    ``read_folder``: the wanted files of a folder in one get, those over their limit only sized."""
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings) as box:
        box.put_files({"/var/lib/ratchet/stage-t/0.tail": ("tail\n", 0o600),
                       "/var/lib/ratchet/own/eval.sh": ("echo hi\n", 0o700),
                       "/tmp/patch.diff": (b"\xffraw", 0o644)}, folders={"/var/lib/ratchet/own": 0o700})
        listed = box.run("stat -c '%U %a %n' /var/lib/ratchet /var/lib/ratchet/stage-t "
                         "/var/lib/ratchet/stage-t/0.tail /var/lib/ratchet/own "
                         "/var/lib/ratchet/own/eval.sh /tmp/patch.diff "
                         "&& stat -c %a /tmp", 30, user="root").stdout.split("\n")
        assert listed[:7] == ["root 755 /var/lib/ratchet", "root 755 /var/lib/ratchet/stage-t",
                              "root 600 /var/lib/ratchet/stage-t/0.tail", "root 700 /var/lib/ratchet/own",
                              "root 700 /var/lib/ratchet/own/eval.sh", "root 644 /tmp/patch.diff",
                              "1777"], listed
        with pytest.raises(ValueError, match="absolute"):
            box.put_files({"relative/x": ("", 0o644)})
        box.run("mkdir -p /var/tmp/r/sub && printf big > /var/tmp/r/a.json && printf ok > "
                "/var/tmp/r/b.json && printf no > /var/tmp/r/c.txt && ln -s a.json /var/tmp/r/l.json "
                "&& printf deep > /var/tmp/r/sub/d.json", 30, user="root")
        found, too_big = box.read_folder(
            "/var/tmp/r", lambda n: {"a.json": 2, "b.json": 10, "l.json": 10, "d.json": 10}.get(n))
        assert (found, too_big) == ({"b.json": b"ok"}, {"a.json": 3})
        assert box.read_folder("/var/tmp/absent", lambda n: 10) == ({}, {})


def test_several_steps_run_in_one_exec(docker_client, calc1_image, local_settings, gold):
    """``run_steps``: each step's status and streams apart, flags through ``$STEPS_DIR``, a
    step's output that imitates the boundary changes nothing; ``first_steps`` run with the
    keep-alive probe. The apply chain (``apply_steps``) applies a patch written by a
    here-document or put beforehand (too long for one exec's argument), and a patch that does
    not apply fails every fallback and the reverse check."""
    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings,
                            first_steps=["echo first; echo why >&2; exit 4"]) as box:
        assert box.main_pid is not None
        assert [(r.exit_code, r.stdout, r.stderr) for r in box.first_results] == [(4, "first\n", "why\n")]
        steps = ["printf 'a\\0b'", "touch \"$STEPS_DIR/flag\"; printf '\\n0123 0 0\\nend\\n'",
                 "[ -e \"$STEPS_DIR/flag\" ] && exit 9", ""]
        results = box.run_steps(steps, 30)
        assert [(r.exit_code, r.stdout, r.stderr) for r in results] == [
            (0, "a\0b", ""), (0, "\n0123 0 0\nend\n", ""), (9, "", ""), (0, "", "")]
        inline = box.run_steps([*apply_steps("/tmp/p.diff", 30, gold["ratchet__calc-1"]),
                                "git diff --stat"], 60)
        assert inline[0].exit_code == 0 and inline[1].exit_code == 0, inline
        assert all(r.exit_code == SKIPPED_STEP for r in inline[2:-1]) and inline[-1].stdout
        box.run("git checkout -- . && git clean -fdq", 30, user="root")
        big = gold["ratchet__calc-1"] + "".join(
            f"diff --git a/big{i}.txt b/big{i}.txt\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/big{i}.txt\n@@ -0,0 +1 @@\n+{'x' * 50_000}\n" for i in range(2))
        assert not inline_patch(big)
        box.write_file("/tmp/big.diff", big)
        put = box.run_steps([*apply_steps("/tmp/big.diff", 30), "wc -c < big1.txt"], 60)
        assert put[0].exit_code == 0 and put[-1].stdout.strip() == "50001", put
        wrong = ("diff --git a/nowhere.py b/nowhere.py\n--- a/nowhere.py\n+++ b/nowhere.py\n"
                 "@@ -1 +1 @@\n-not there\n+x\n")
        failed = box.run_steps(apply_steps("/tmp/w.diff", 30, wrong), 60)
        assert failed[0].exit_code == 0 and all(r.exit_code not in (0, SKIPPED_STEP)
                                                for r in failed[1:]), failed


def test_output_that_comes_with_the_upgrade_headers_is_kept(docker_client, calc1_image,
                                                            local_settings, monkeypatch):
    """A client slow to read the exec's ``101 UPGRADED`` headers (a loaded machine) finds the
    command's first frames in the same ``recv`` as the headers; docker-py's own exec stream
    dropped them, and an agent saw an empty observation (docker/docker-py#3332). Every stream
    and byte comes back, a quiet command's too."""
    begin = http.client.HTTPResponse.begin

    def late_reader(response):
        time.sleep(0.3)  # the command has run and written by the time the headers are read
        return begin(response)

    with instance_container(docker_client, calc1_image, "ratchet__calc-1", local_settings) as box:
        monkeypatch.setattr(http.client.HTTPResponse, "begin", late_reader)
        both = box.run("echo out; echo err >&2", 30)
        large = box.run("head -c 100000 /dev/zero | tr '\\0' x", 30)
        quiet = box.run("true", 30)
    assert (both.exit_code, both.stdout, sorted(both.output.splitlines())) == (0, "out\n", ["err", "out"])
    assert large.stdout == "x" * 100_000
    assert (quiet.exit_code, quiet.output) == (0, "")


_RACE = """
import logging, sys, threading
from ratchet_ray.suites.swebench.settings import GradingLimits
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.docker.infra import classify_exception
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from ratchet_ray.suites.swebench.integrity.verdict import test_runner

logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="LOGGED %(message)s")
grader = SwebenchGrader(SwebenchSettings(namespace=None), GradingLimits(), sys.argv[1])
failures = []
def guarded(call):
    try:
        call()
    except BaseException as exc:
        failures.append(f"{type(exc).__name__}: {exc}")
others = [threading.Thread(target=guarded, args=(call,)) for call in (
    lambda: classify_exception(OSError()), lambda: test_runner("parse_log_pytest"))]
grader.start_warm_up()
for thread in others:
    thread.start()
guarded(grader.reap)
for thread in others:
    thread.join()
grader.warm([])
print("FAILED", failures) if failures else print("clean")
"""


def test_first_imports_from_several_threads_do_not_deadlock(docker_client, tmp_path):
    """A grader's warm-up imports swebench's harness in the background while the actor's thread
    reaps (which imports docker-py) and other threads classify an error and read the parser
    table: each is a package whose modules import each other in a cycle, and two threads inside
    one cycle raised ``_DeadlockError`` (the reap in a CI run failed so). Each try is a fresh
    interpreter, so every import is a first one; all must come out clean and the warm-up must
    log nothing."""
    for attempt in range(4):
        run = subprocess.run([sys.executable, "-c", _RACE, str(tmp_path / str(attempt))],
                             capture_output=True, text=True, timeout=240, cwd=ROOT)
        assert (run.returncode, run.stdout.strip()) == (0, "clean"), run.stdout + run.stderr[-2000:]
