"""``python -m jobs.ablations --address http://HOST:PORT`` (the dashboard URL, the form of ``ray
job submit``) on a real Ray head: the sweep learns the cluster's GCS address from it, its job
runs from the folder the sweep was started in (a relative ``suite_plugins`` path resolves
there), and the run finishes. The ``sim`` suite: no model, one round of 4+4 tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ratchet_ray.arm_summary import find_run_dirs
from ratchet_ray.sweep.ray_head import ray_cluster

PLUGIN = ("from ratchet_ray.suites import register\n\n"
          "# Found only relative to the caller's folder: the job must run there.\n"
          "register('cwd_probe', 'ratchet_ray.suites.sim:SimSuite')\n")


def test_a_sweep_on_the_dashboard_url_runs_from_the_callers_folder(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0")
    caller = tmp_path / "caller"
    caller.mkdir()
    (caller / "cwd_probe.py").write_text(PLUGIN)
    out = tmp_path / "sweep"
    with ray_cluster(4, tmp_path / "head.log", env) as cluster_env:
        env.update(cluster_env)
        address = env.pop("RAY_ADDRESS")
        url = env.pop("RAY_API_SERVER_ADDRESS")  # the dashboard's URL, as `ray job submit` takes
        assert url.startswith("http://127.0.0.1:")
        sweep = subprocess.run(
            [sys.executable, "-m", "jobs.ablations", "sim", "--arms", "default", "--seeds", "5",
             "--rounds", "1", "--n-train", "4", "--n-eval", "4", "--set", "sim.n_tasks=8",
             "--set", "suite_plugins=[cwd_probe.py]", "--address", url, "--out", str(out)],
            cwd=caller, env=env, capture_output=True, text=True, timeout=420)
    assert sweep.returncode == 0, (sweep.stdout[-2000:], sweep.stderr[-3000:],
                                   (out / "logs" / "default_s5.log").read_text()[-3000:]
                                   if (out / "logs" / "default_s5.log").is_file() else "")
    assert f"ray cluster {address}" in sweep.stderr  # the GCS address, learnt from the URL
    runs = find_run_dirs(out / "runs")
    assert len(runs) == 1
    config = (runs[0] / "config.yaml").read_text()
    assert str(caller / "cwd_probe.py") in config  # resolved in the caller's folder
    assert len(json.loads((runs[0] / "loop.json").read_text())["rounds"]) == 1
