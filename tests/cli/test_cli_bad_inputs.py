"""The bad inputs of issue 39, each refused on one ``Error:`` line naming the cause and the fix,
before anything starts where it can be checked first (no run folder, no Ray: ``refusals``):
an unreadable evidence part (``query``, ``skill list``, ``report`` point to ``ratchet evidence
verify``), a subset whose train and eval share a task, a run of 0 rounds or 0 tasks, an MLflow
URI that is malformed or has no server behind it (``--dry-run`` too), ``select-subset`` on an
empty baseline, ``ablations --arms ''``, ``skill load`` of a missing folder, ``doctor --llm
openai`` with no server URL."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from pathlib import Path

import pytest

from refusals import no_ray, no_run_folder, ratchet, refused  # noqa: F401 (no_ray: a fixture)
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.evidence.store import EvidenceStore

pytestmark = pytest.mark.usefixtures("no_ray")


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """The results dir of the runs the tests try to start (relative paths land in tmp_path)."""
    monkeypatch.chdir(tmp_path)
    # A proxy would answer for 127.0.0.1 in the server's stead (urllib, as MLflow, uses one).
    for name in ("OPENAI_BASE_URL", "RATCHET_MLFLOW_URI", "RAY_ADDRESS", "http_proxy",
                 "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "results"


def run(results: Path, *args: str):
    return ratchet("run", "mbpp", "--rounds", "1", "--set", f"results_dir={results}", *args)


# ---- an unreadable evidence part ---------------------------------------------------------------
def _run_with_parts(path: Path) -> tuple[Path, list[Path]]:
    """A run dir with two skill_event parts (rounds 0 and 1)."""
    path.mkdir(parents=True)
    dump_config(LoopConfig(), path / "config.yaml")
    store = EvidenceStore(path)
    for round_ in (0, 1):
        store.append("skill_event", round_, [{"run_id": path.name, "round": round_,
                                              "skill_id": f"s{round_}", "event": "added"}])
    return path, store.part_paths("skill_event")


def _garbage(part: Path) -> None:
    part.write_bytes(b"not parquet " * 20)  # no footer: DuckDB fails making the view


def _bad_pages(part: Path) -> None:
    """Every column's pages garbled, the footer intact: DuckDB fails reading the rows."""
    data = bytearray(part.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")  # ... <footer> <its length> PAR1
    for i in range(4, len(data) - 8 - footer):
        data[i] ^= 0xFF
    part.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garbage, _bad_pages], ids=["no-footer", "bad-pages"])
@pytest.mark.parametrize("command", [["query", "select * from skill_event"], ["skill", "list"],
                                     ["report"]], ids=["query", "skill-list", "report"])
def test_an_unreadable_part_is_one_line_naming_evidence_verify(tmp_path, command, damage):
    run_dir, parts = _run_with_parts(tmp_path / "mbpp_r2_run")
    damage(parts[0])
    if command == ["report"]:
        args = ["report", str(run_dir), "-o", str(tmp_path / "report.html")]
    else:
        args = ["--db", str(run_dir), *command]
    line = refused(ratchet(*args), f"evidence part {parts[0]} cannot be read",
                   f"ratchet --db {run_dir} evidence verify", "evidence repair")
    assert "Traceback" not in line


def test_a_mistake_in_the_sql_is_not_blamed_on_the_evidence(tmp_path):
    run_dir, _ = _run_with_parts(tmp_path / "mbpp_r2_run")
    line = refused(ratchet("--db", str(run_dir), "query", "select nope from skill_event"),
                   'query failed: Binder Error: Referenced column "nope" not found',
                   'Candidate bindings: "')  # DuckDB's text (its nearest column), on one line
    assert "evidence verify" not in line


# ---- the run's size and its subset ---------------------------------------------------------------
def test_a_subset_whose_train_and_eval_share_a_task(results, tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2", "Mbpp/3"],
                                  "eval_ids": ["Mbpp/3", "Mbpp/4"]}))
    refused(run(results, "--subset", str(subset), "--dry-run"),
            f"subset file {subset}: 1 task id(s) are in both train_ids and eval_ids",
            "'Mbpp/3'", "remove them from one of the two lists")
    no_run_folder(results)


def test_a_subset_listing_a_task_twice(results, tmp_path):
    """The run dir's name counted it twice (t2), its task was solved twice and one kept."""
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2", "Mbpp/2"], "eval_ids": ["Mbpp/3"]}))
    refused(run(results, "--subset", str(subset), "--dry-run"),
            f"subset file {subset}: train_ids lists 1 task id(s) more than once", "'Mbpp/2'",
            "list each once")
    no_run_folder(results)


def test_a_subset_this_user_may_not_read_names_the_access_it_needs(tmp_path, monkeypatch):
    """'cannot read it (Permission denied)' named no fix; the one read wording names it
    (``fsutil.cannot_read``), as for a run's files."""
    from ratchet_ray.storage import fsutil
    from ratchet_ray.suites.base import read_subset

    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2"], "eval_ids": ["Mbpp/3"]}))

    def denied(self, *_args, **_kwargs):  # as a mode of 000 would, which root reads past
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", denied)
    monkeypatch.setattr(fsutil, "may_read", lambda path: Path(path) != subset)
    with pytest.raises(ValueError) as refused_read:
        read_subset(subset)
    assert str(refused_read.value) == (
        f"subset file {subset}: cannot read it: Permission denied; fix: give this user read "
        f"access (e.g. `chmod -R u+rX {subset}`), or run as its owner")


def test_a_subset_path_that_is_a_folder_names_the_fix(tmp_path):
    """A folder given as the subset file said 'cannot read it: Is a directory' and no fix."""
    from ratchet_ray.suites.base import read_subset

    with pytest.raises(ValueError) as refused:
        read_subset(tmp_path)
    assert str(refused.value) == (f"subset file {tmp_path}: cannot read it: Is a directory; "
                                  "fix: name a file, not a folder")


@pytest.mark.parametrize("args, words", [
    (["--rounds", "0"], ["rounds=0 runs no round", "--rounds 1 or more"]),
    (["--set", "rounds=0"], ["rounds=0 runs no round", "--rounds 1 or more"]),
    (["--n-train", "0", "--n-eval", "0"], ["n_train=0", "--n-train 1 or more", "n_eval=0",
                                           "--n-eval 1 or more"]),
    (["--n-eval", "0"], ["n_eval=0: eval pass@1 would be measured on no task"]),
], ids=["rounds-flag", "rounds-set", "no-tasks", "no-eval"])
def test_a_run_that_would_measure_nothing(results, args, words):
    out = ratchet("run", "mbpp", "--set", f"results_dir={results}", *args)
    refused(out, *words)
    no_run_folder(results)
    # --dry-run checks it too: a plan that prints is a plan that runs.
    refused(ratchet("run", "mbpp", "--set", f"results_dir={results}", *args, "--dry-run"),
            *words)


def test_a_subset_with_an_empty_eval_list(results, tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2"], "eval_ids": []}))
    refused(run(results, "--subset", str(subset)), f"subset file {subset} has an empty "
            "eval_ids list")
    no_run_folder(results)


# ---- MLflow tracking ---------------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed when the socket is: nothing listens there


@pytest.mark.parametrize("uri, words", [
    ("localhost:5000", ["tracking.mlflow_uri=localhost:5000 is not a tracking URI MLflow knows",
                        "http://HOST:PORT"]),
    ("http://", ["tracking.mlflow_uri=http:// is not a tracking URI"]),
    ("sqlite:////no/such/folder/mlflow.db", ["the folder /no/such/folder of the database file "
                                             "does not exist", "mkdir -p /no/such/folder"]),
], ids=["no-scheme", "no-host", "sqlite-folder"])
def test_a_malformed_mlflow_uri(results, uri, words):
    refused(run(results, "--set", f"tracking.mlflow_uri={uri}", "--dry-run"), *words)
    refused(run(results, "--set", f"tracking.mlflow_uri={uri}"), *words)
    no_run_folder(results)


def test_an_mlflow_server_that_does_not_answer(results, monkeypatch):
    uri = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("RATCHET_MLFLOW_URI", uri)  # the variable, named as the source
    refused(run(results, "--dry-run"), f"$RATCHET_MLFLOW_URI={uri}: no MLflow server answers",
            "mlflow server --host 127.0.0.1 --port 5000", "unset tracking.mlflow_uri and "
            "$RATCHET_MLFLOW_URI")
    no_run_folder(results)


def test_tracking_without_mlflow_installed(results, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)  # what a venv without the extra looks like
    refused(run(results, "--set", "tracking.enabled=true", "--dry-run"),
            "tracking.enabled: MLflow tracking needs the package mlflow",
            "pip install 'ratchet-ray[tracking]'", "--set tracking.enabled=false")
    no_run_folder(results)


def test_an_answering_server_passes(results):
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the handler's API)
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"OK")

        def log_message(self, *args):  # quiet
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        uri = f"http://127.0.0.1:{server.server_port}"
        out = run(results, "--set", f"tracking.mlflow_uri={uri}", "--dry-run")
    finally:
        server.shutdown()
    assert out.exit_code == 0, out.output
    assert f"mlflow_uri: {uri}" in out.output
    no_run_folder(results)


# ---- select-subset, ablations, skill load, doctor ------------------------------------------------
def test_select_subset_on_an_empty_baseline(tmp_path):
    empty = tmp_path / "baseline.jsonl"
    empty.write_text("")
    args = ["select-subset", "--source", str(empty), "--suite", "mbpp", "--n-train", "3",
            "--n-eval", "2", "--out-dir", str(tmp_path / "subsets")]
    line = refused(ratchet(*args), f"{empty} is empty (no baseline rows)",
                   "python -m jobs.baseline mbpp")
    assert "--n-hard" not in line
    empty.write_text(json.dumps({"suite": "sim", "task_id": "t1", "probe": 0, "passed": False})
                     + "\n")
    refused(ratchet(*args), "holds baseline rows of sim, none of mbpp", "--suite sim")
    solved = [{"suite": "mbpp", "task_id": f"Mbpp/{t}", "probe": p, "passed": True}
              for t in (2, 3) for p in range(5)]
    empty.write_text("".join(json.dumps(r) + "\n" for r in solved))
    line = refused(ratchet(*args), "none of the 2 baseline tasks is hard", "--min-solved")
    assert "<= 0" not in line
    assert not (tmp_path / "subsets").exists()


def test_ablations_with_no_arms_shows_an_arms_example(tmp_path):
    line = refused(ratchet("ablations", "mbpp", "--arms", "", "--out", str(tmp_path / "sweep"),
                           "--dry-run"), "--arms", "default,A1,A4")
    assert "42,7,13" not in line


def test_ablations_check_the_runs_size_first(tmp_path):
    refused(ratchet("ablations", "mbpp", "--arms", "default", "--n-eval", "0", "--out",
                    str(tmp_path / "sweep"), "--dry-run"), "n_eval=0", "--n-eval 1 or more")
    assert not (tmp_path / "sweep").exists()


def test_skill_load_of_a_missing_folder(tmp_path):
    run_dir, _ = _run_with_parts(tmp_path / "mbpp_r2_run")
    gone = tmp_path / "no-such-skills"
    refused(ratchet("--db", str(run_dir), "skill", "load", str(gone)),
            f"{gone} does not exist", "pass a folder of skill YAML files",
            "give no FOLDER")
    assert not (run_dir / ".lock").exists() and not gone.exists()


def test_doctor_openai_without_a_url_is_refused_before_ray(monkeypatch):
    from ratchet_ray.llm import doctor

    def started(*args, **kwargs):
        raise AssertionError("doctor started Ray before refusing")

    monkeypatch.setattr(doctor, "_start_ray_probe", started)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    refused(ratchet("doctor", "--llm", "openai"), "the openai backend needs its server's URL",
            "--base-url http://HOST:PORT/v1", "OPENAI_BASE_URL")
    refused(ratchet("doctor", "--llm", "openai", "--base-url", "localhost:8000/v1"),
            "is not an http(s) URL")
