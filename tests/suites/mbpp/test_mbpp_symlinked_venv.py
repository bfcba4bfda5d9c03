"""MBPP+ grading from a venv reached through a symlink (shared disks, conda, CI caches).

The sandbox binds the runtime by its real paths, so the job must name evalplus's guard and the
site-packages by their real paths too; named through the link, every grade used to fail
``sandbox_setup_error ... FileNotFoundError: '<link>/lib/python3.X/site-packages/evalplus/...'``.
The test runs the real grader (``nonroot_grader.py``, here as this test's own user) in a process
started with the link's interpreter, so ``sys.prefix`` and ``sysconfig`` name the link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TASK = "Mbpp/17"


def test_grading_works_from_a_venv_reached_through_a_symlink(tmp_path, groundtruth_store, mbpp_dataset):
    venv = Path(sys.prefix).resolve()
    assert venv != Path(sys.base_prefix).resolve(), "the tests must run from a venv"
    link = tmp_path / "venv-link"
    link.symlink_to(venv, target_is_directory=True)
    python = link / "bin" / Path(sys.executable).name
    probe = subprocess.run([str(python), "-c", "import sys, sysconfig; print(sys.prefix); "
                            "print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True)
    prefix, purelib = probe.stdout.split()
    assert prefix == str(link) and purelib.startswith(str(link)), probe.stdout  # names the link
    assert Path(purelib).resolve() == Path(sysconfig.get_paths()["purelib"]).resolve()

    jobs = [{"task_id": TASK, "output": mbpp_dataset.problem(TASK)["canonical_solution"]},
            {"task_id": TASK, "output": "def square_perimeter(a):\n    return 5 * a\n"},
            # a package of the venv's site-packages (pydantic's dependency), found by its real path
            {"task_id": TASK, "output": "import typing_extensions\ndef square_perimeter(a):\n"
                                        "    return 4 * a\n"}]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RATCHET_REPO": str(REPO),
           "MBPP_OVERRIDE_PATH": os.environ["MBPP_OVERRIDE_PATH"],
           "RATCHET_TEST_LIMITS": json.dumps({"budget_s": 10.0, "grace_s": 10.0})}
    done = subprocess.run([str(python), str(HERE / "nonroot_grader.py"), str(groundtruth_store.root)],
                          input=json.dumps(jobs), capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    header, results = lines[0], lines[1:]
    assert header["isolation"].startswith("bwrap"), header
    statuses = [(r["passed"], r["exit_status"], r["infra_failure"]) for r in results]
    assert statuses == [(True, "ok", False), (False, "failed_tests", False), (True, "ok", False)], \
        [r["trace"] for r in results]
