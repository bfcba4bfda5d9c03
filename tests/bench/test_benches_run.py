"""Every bench in ``bench/`` runs at a tiny size (seconds), so a change under a bench (a schema, a
function it calls, a flag it passes) breaks a test here, not a user's benchmark.

Each bench runs as a user runs it, a process of this venv's Python, and the shape of what it
prints is checked: its table rows, its ratios, its target line. The numbers are not: at this
size they mean nothing. A bench that needs Docker, the cluster or the local model is marked as the
tests of that part are (``docker``, ``cluster``, ``slow`` + ``model``). ``BENCHES`` names what
runs each script; a new script in ``bench/`` without a tiny run here fails
``test_every_bench_script_has_a_tiny_run``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
NUMBER = r"-?\d+(?:\.\d+)?"
DOCKER_HINT = "run `bash .ci/docker_setup.sh` (starts dockerd and builds ratchet-swe-base)"

# Each runnable script of bench/ (one with a ``__main__``), and the test that runs it tiny.
BENCHES = {
    "evidence_query.py": "test_evidence_query",
    "embedder_paths.py": "test_embedder_paths",
    "mbpp_frame_memory.py": "test_mbpp_frame_memory",
    "mbpp_extract.py": "test_mbpp_extract",
    "grader_agreement.py": "test_grader_agreement",
    "sim_speed.py": "test_sim_speed",
    "round_scaling.py": "test_round_scaling",  # delay_server.py is its LLM server
    "delay_server.py": "test_round_scaling",
    "doctor_time.py": "test_doctor_time",
    "llm_local.py": "test_llm_local",
    # At seed 1 with the quickstart's own flags: the quickstart's test is this bench's tiny run.
    "quickstart_seeds.py": "tests/loop/test_quickstart_learns.py::"
                           "test_the_quickstart_learns_a_skill_and_routes_it",
    "swe_sentinel_cost.py": "test_swe_sentinel_cost",
    "swe_throughput.py": "test_swe_throughput",
    # ``swe_scale.py drive``: swe_throughput's --nodes (a local cluster of Docker nodes), the
    # one part not run here; its round (``run_round``) runs in test_swe_throughput.
    "swe_scale.py": "test_swe_throughput",
    "swe_harness_agreement.py": "test_swe_harness_agreement",
    "mutant_detector.py": "test_mutant_detector",
    "mutant_rules.py": "tests/suites/swebench/test_swebench_mutants.py::"
                       "test_the_rules_bench_runs_on_a_cached_sdist",
    "swe_realcode.py": "test_swe_realcode",
    # On the same one-instance set, after swe_realcode made its gold record:
    "swe_realcode_reach.py": "test_swe_realcode",
    "swe_realcode_throughput.py": "test_swe_realcode",
    "swe_install_uid.py": "test_swe_realcode",
    "swe_solvers.py": "test_swe_solvers",
    "host_marks.py": "test_host_marks",
}


def run_bench(script: str, *args: str, timeout: float = 300) -> str:
    """The bench's stdout; fails with the end of its output when it exits non-zero."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"bench/{script} {' '.join(args)} exited {proc.returncode}:\n"
                                  f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def lines_matching(output: str, pattern: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(pattern, line)]


def test_every_bench_script_has_a_tiny_run():
    runnable = {p.name for p in BENCH.glob("*.py") if "__main__" in p.read_text()}
    assert runnable == set(BENCHES), (
        f"bench scripts without a tiny run here: {sorted(runnable - set(BENCHES))}; "
        f"named here but gone: {sorted(set(BENCHES) - runnable)}")
    here = {name for name in BENCHES.values() if "::" not in name}
    assert here <= set(globals())
    for elsewhere in set(BENCHES.values()) - here:
        path, name = elsewhere.split("::")
        assert f"def {name}(" in (ROOT / path).read_text(), elsewhere


def test_evidence_query():
    out = run_bench("evidence_query.py", "--capsules", "3000", "--rounds", "3", "--skills", "6",
                    "--repeats", "1")
    assert re.search(r"data: 3,000 capsules, 3 rounds, 6 skills", out), out
    assert "6 skills, answers agree" in out, out
    assert re.search(rf"ratio sqlite/duckdb: {NUMBER}x \(reference table\)", out), out
    assert re.search(r"target \(.*\): (MET|NOT MET)$", out, re.M), out


def test_embedder_paths():
    out = run_bench("embedder_paths.py", "--texts", "8", "--repeat", "1", "--batch", "4",
                    "--threads", "1")
    assert re.search(rf"numpy path: .*cold start {NUMBER} s; {NUMBER} texts/s", out), out
    assert ("torch path: not measured" in out
            or re.search(rf"numpy / torch: throughput {NUMBER}", out)), out


def _bubblewrap_or_skip() -> None:
    from ratchet_ray.suites.mbpp.sandbox import Sandbox

    sandbox = Sandbox()
    if sandbox.mode != "bwrap":
        pytest.skip(f"needs the bubblewrap sandbox: {sandbox.description} (`make sandbox`)")


def test_mbpp_frame_memory():
    _bubblewrap_or_skip()
    out = run_bench("mbpp_frame_memory.py", "--frame-mb", "1", "--cap-mb", "8")
    for kind in ("string", "forged_lists"):
        assert lines_matching(out, rf"^\s*{kind}: frame {NUMBER} MiB, grader .* ratio {NUMBER};"), out


def test_mbpp_extract():
    out = run_bench("mbpp_extract.py", "--kb", "2", "--repeats", "1")
    assert re.search(rf"^2 KB: normal reply {NUMBER} ms$", out, re.MULTILINE), out
    rows = lines_matching(out, rf"^  \w+\s+2 KB\s+{NUMBER} ms  \w+\s+ratio to normal\s+{NUMBER}  "
                               rf"to typical\s+{NUMBER}$")
    assert len(rows) == 9, out
    assert re.search(rf"worst ratio to a normal reply of the same size {NUMBER}; "
                     rf"target <= {NUMBER}: (met|NOT met)", out), out


def test_grader_agreement():
    if not os.environ.get("MBPP_OVERRIDE_PATH"):
        pytest.skip("set MBPP_OVERRIDE_PATH to MbppPlus-v0.2.0.jsonl.gz (the Makefile does)")
    _bubblewrap_or_skip()
    out = run_bench("grader_agreement.py", "--workers", "1", "--tasks", "2")
    assert "MBPP+ grader agreement: 2 tasks x 3 solutions, 1 workers" in out, out
    assert len(lines_matching(out, r"^\s+\w+\s*: agreement \d+/2 ")) == 3, out
    assert re.search(rf"throughput ratio ours/evalplus {NUMBER}", out), out


def test_mutant_detector(tmp_path):
    out = run_bench("mutant_detector.py", "--files", "25", "--packages", "numpy,networkx")
    assert re.search(r"test files: 25, expectations: \d+", out), out
    assert len(lines_matching(out, rf"^\| (before|after) \| {NUMBER} \| \w+ \| {NUMBER} \|$")) == 2, out
    assert re.search(r"target: detector AUC after <= 0.6: (met|NOT met)", out), out
    # --realcode: a real project's sdist as make-instances caches it, its instance set naming
    # the graded test files (five of six: the sixth is not graded)
    import io
    import json
    import tarfile
    (tmp_path / "cache" / "demo-1.0" / "sdist").mkdir(parents=True)
    with tarfile.open(tmp_path / "cache" / "demo-1.0" / "sdist" / "demo-1.0.tar.gz", "w:gz") as tar:
        for i in range(6):
            body = "".join(f"def test_{j}():\n    v = make({i + j}, 'k{j}')\n    assert size(v) == {j + 2}\n"
                           f"    assert name(v) == 'item {j}'\n\n\n" for j in range(4)).encode()
            info = tarfile.TarInfo(f"demo-1.0/tests/test_m{i}.py")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    (tmp_path / "sets" / "demo-1.0").mkdir(parents=True)
    (tmp_path / "sets" / "demo-1.0" / "instances.jsonl").write_text(json.dumps(
        {"FAIL_TO_PASS": json.dumps([f"tests/test_m{i}.py::test_0" for i in range(5)]),
         "PASS_TO_PASS": "[]"}) + "\n")
    out = run_bench("mutant_detector.py", "--realcode", "all", "--repeats", "1", "--cache",
                    str(tmp_path / "cache"), "--instances", str(tmp_path / "sets"), "--drawing",
                    str(ROOT / "ratchet_ray/suites/swebench/proof/replacement_literal.py"))
    rows = lines_matching(out, rf"^\| demo-1\.0 \| 5 graded test files \| 20 \| (before|after) \| "
                               rf"{NUMBER} \[{NUMBER}, {NUMBER}\] \| \w+ \| {NUMBER} \|$")
    assert len(rows) == 2, out
    assert re.search(r"target: detector AUC after <= 0.6 on every project: (met|NOT met) "
                     rf"\(demo-1\.0 {NUMBER}\)", out), out


def test_sim_speed():
    out = run_bench("sim_speed.py", "--rounds", "2", "--skip-sweep")
    assert re.search(rf"sim one arm: 2 rounds x 100 tasks in {NUMBER} s .* ratio {NUMBER}", out), out


@pytest.mark.slow  # two sim drivers, each with a Ray of its own (test_sim_speed runs part 1)
def test_sim_speed_sweep():
    out = run_bench("sim_speed.py", "--sweep-only", "--sweep-rounds", "1", "--arms", "default",
                    "--parallel", "2")
    assert "sim one arm" not in out, out
    assert re.search(rf"sim sweep: 1 runs x 1 rounds: serial {NUMBER} s, --parallel 2 {NUMBER} s, "
                     rf"speed-up {NUMBER}x", out), out


@pytest.mark.cluster
def test_round_scaling():
    out = run_bench("round_scaling.py", "--nodes", "1", "--actors", "2", "--tasks", "4",
                    "--delay", "0.05")
    assert "one round: 4 tasks x 2 LLM calls" in out, out
    assert lines_matching(out, rf"^\s+1\s+2(\s+{NUMBER}){{6}}$"), out  # nodes, actors, 6 figures
    assert re.search(r"^total \d+s$", out, re.M), out


@pytest.mark.slow
@pytest.mark.model
def test_doctor_time():
    out = run_bench("doctor_time.py", "--runs", "1")
    assert re.search(rf"median {NUMBER} s; target 30 s; ratio target/median {NUMBER}", out), out


@pytest.mark.slow
@pytest.mark.model
def test_llm_local():
    out = run_bench("llm_local.py", "--tokens", "4", "--reps", "1", "--ray")
    for label in ("free text", "json-schema grammar", "free text via Ray"):
        assert lines_matching(out, rf"^{label}\s+raw\s+{NUMBER} tok/s \| ours\s+{NUMBER} tok/s \| "
                                   rf"ratio {NUMBER}"), out
    out = run_bench("llm_local.py", "--extra-bufts", "--tokens", "4", "--reps", "1")
    assert ("this CPU reports AMX" in out
            or len(lines_matching(out, rf"ratio off/on {NUMBER}$")) == 2), out


def _docker_or_skip() -> None:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=60)
        client.ping()
        client.images.get(os.environ.get("RATCHET_SWE_BASE_IMAGE", "ratchet-swe-base"))
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker daemon or base image ({exc}); {DOCKER_HINT}")


@pytest.mark.docker
def test_swe_sentinel_cost():
    _docker_or_skip()
    out = run_bench("swe_sentinel_cost.py", "--runs", "1", "--repos", "fast")
    assert lines_matching(out, rf"^fast \(60 tests\), medians of 1: wall plain {NUMBER}s, .*"
                               r"results clean: True$"), out


@pytest.mark.docker
def test_host_marks():
    _docker_or_skip()
    out = run_bench("host_marks.py", "--bits", "32", "--repeats", "1")
    assert "host marks: 32 bits, 1 write/read pairs per carrier" in out, out
    for carrier in ("page cache, not cleared", "page cache, cleared by the grader",
                    "dentry cache, cleared by the grader", "dentry cache, not cleared"):
        assert lines_matching(out, rf"^{carrier}: agreement {NUMBER} \(min {NUMBER}, max {NUMBER}\)"), out
    assert re.search(r"target: .*: (met|NOT met)$", out, re.M), out


@pytest.mark.slow  # a gold record, a graded floor, a grade and a round, each with canary sessions
@pytest.mark.docker
def test_swe_throughput(tmp_path):
    _docker_or_skip()
    out = run_bench("swe_throughput.py", "--instances", "1", "--workers", "1", "--repeat", "1",
                    "--no-hang", "--round", "--profile", "--timeout", "60", "--out",
                    str(tmp_path), "--set", "swebench.canary_sessions=[2,2]", timeout=850)
    assert re.search(rf"^W=1: floor {NUMBER}s .* 1/1 resolved.* \| ours {NUMBER}s .*1/1 resolved",
                     out, re.M), out
    assert re.search(r"^  ours per grade: .*\beval ", out, re.M), out
    assert re.search(r"^  round W=1: .* 1/1 resolved", out, re.M), out
    assert (tmp_path / "swe_throughput.json").is_file()


@pytest.mark.slow  # three grades with canary sessions and three runs of the official harness
@pytest.mark.docker
def test_swe_harness_agreement(tmp_path):
    """Ours and the official harness on one predictions file per round: they agree on the gold
    patch (resolved) and on a README-only one (unresolved), and differ on a forgery the way
    docs/swebench.md says (the harness parses the test log the patch rewrites and resolves it;
    ours calls it tampering)."""
    _docker_or_skip()
    out = run_bench("swe_harness_agreement.py", "--instances", "ratchet__calc-1", "--kinds",
                    "gold,wrong,forgery", "--forgeries", "forge_only_graded", "--workers", "1",
                    "--json", str(tmp_path / "agreement.json"), timeout=900)
    assert lines_matching(out, r"^\| gold \| 1 \| 1/1 \| 1 \| 1 \|$"), out
    assert lines_matching(out, r"^\| wrong \| 1 \| 1/1 \| 0 \| 0 \|$"), out
    assert lines_matching(out, r"^\| forgery \| 1 \| 0/1 \| 0 \| 1 \|$"), out
    assert ("- forgery forge_only_graded on ratchet__calc-1: ours test_tampering, harness "
            "resolved") in out, out
    assert re.search(rf"^ours {NUMBER} s for 3 grades; harness {NUMBER} s \(3 harness runs\)", out,
                     re.M), out
    assert (tmp_path / "agreement.json").is_file()


@pytest.mark.slow  # a real-project set of one instance built, then its gold and no-op graded
@pytest.mark.docker
def test_swe_realcode(tmp_path):
    _docker_or_skip()
    sys.path.insert(0, str(ROOT / "tests" / "suites" / "swebench" / "realcode"))
    from tiny_project import PROJECT, write_tree

    from ratchet_ray.suites.swebench.realcode.build import Request, make_instances

    recipe = make_instances(Request(project=PROJECT, out=tmp_path / "set", cache=tmp_path,
                                    source=write_tree(tmp_path / "tinycalc"), count=1),
                            note=lambda _: None)
    dataset = str(tmp_path / "set" / "instances.jsonl")
    try:
        out = run_bench("swe_realcode.py", "--dataset", dataset, "--repeat", "1", "--workers", "1",
                        "--out", str(tmp_path / "bench"), timeout=900)
        gold = str(next((tmp_path / "bench").glob("*/gold")))
        reach = run_bench("swe_realcode_reach.py", "--dataset", dataset, "--gold", gold,
                          "--out", str(tmp_path / "reach"), timeout=600)
        speed = run_bench("swe_realcode_throughput.py", "--dataset", dataset, "--gold", gold,
                          "--workers", "1", "--out", str(tmp_path / "speed"), timeout=600)
        # tinycalc has no build file, so its install fails: the row still shows it ran as the uid
        install = run_bench("swe_install_uid.py", "--dataset", dataset, "--command", "offline",
                            "--out", str(tmp_path / "install"), timeout=600)
    finally:
        for image in [*(f"sweb.eval.x86_64.{i.lower()}:latest" for i in recipe["instances"]),
                      recipe["image"]["tag"]]:
            subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
    assert len(lines_matching(out, rf"^\| ratchet__tinycalc-\S+ \| 1/1 \| 1/1 \| 0\.00 \| {NUMBER} \|")) == 1, out
    assert re.search(r"target: every gold resolved .*: met", out), out
    assert len(lines_matching(reach, r"^\| ratchet__tinycalc-\S+ \| 1 \| \d+ \| \d+ \| \d+ \| "
                                     r"[01]/1 \| (yes|no) \| (yes|no) \|")) == 1, reach
    assert re.search(r"^first canary session mutates a FAIL_TO_PASS test on [01]/1 instances; .* "
                     r"impossible twin built on [01]/1$", reach, re.M), reach
    assert len(lines_matching(speed, rf"^\| 1 \| {NUMBER} \| {NUMBER} \| {NUMBER} \| {NUMBER} \| "
                                     rf"{NUMBER} \| 1/1 / 1/1 \|")) == 1, speed
    assert len(lines_matching(install, r"^\| ratchet__tinycalc-\S+ \| offline: .* \| exit \d+ in "
                                       r"\d+ ms as uid 65534; .* \| resolved \|")) == 1, install


@pytest.mark.slow  # the local model drives each Solver one step, then two grades
@pytest.mark.model
@pytest.mark.docker
def test_swe_solvers(tmp_path):
    _docker_or_skip()
    out = run_bench("swe_solvers.py", "--instance", "ratchet__calc-1", "--max-steps", "1",
                    "--out", str(tmp_path), timeout=600)
    assert lines_matching(out, r"^date .*; machine .*; model local "), out
    for solver in ("ratchet", "mini-swe-agent"):
        assert lines_matching(out, rf"^\| ratchet__calc-1 \| {solver} \| 1 \| [01] \| \d+ \| \d+ \| "
                                   rf"\w+ \| \d+ \| \w+( \(resolved\))? \| \d+ \|$"), out
        assert lines_matching(out, rf"^{solver}: [01]/1 resolved, 1 LLM calls, \d+ tokens"), out
    assert len(json.loads(next(tmp_path.glob("*/swe_solvers.json")).read_text())) == 2
