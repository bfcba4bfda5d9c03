"""The run's artifact store: a local folder (the default: the run dir) and a ``pyarrow.fs`` URI
(``file://`` here; ``s3://`` takes the same code path), and the service actor that carries a
head-local store to actors on other nodes."""

from __future__ import annotations

import json
import pickle

import pytest
from click.testing import CliRunner

from ratchet_ray.storage.artifacts import ArtifactError, ArtifactStore, as_artifacts, run_artifacts
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.llm.cache import CACHE_DIRNAME, CachedLLM, SolverCache


def _stores(tmp_path) -> list[ArtifactStore]:
    return [ArtifactStore(tmp_path / "local"), ArtifactStore(f"file://{tmp_path}/uri")]


@pytest.mark.parametrize("kind", [0, 1], ids=["local-path", "file-uri"])
def test_put_get_keys_delete_in_a_folder_and_behind_a_uri(tmp_path, kind):
    store = _stores(tmp_path)[kind]
    assert store.get("logs/a.json") is None and store.keys() == [] and store.keys("logs") == []
    store.put_json("logs/x/a.json", {"n": 1})
    store.put_text("logs/x/b.txt", "first")
    store.put_text("logs/x/b.txt", "second")  # replaced whole
    store.put("top.bin", b"\x00\x01")
    assert store.get_json("logs/x/a.json") == {"n": 1}
    assert store.get_text("logs/x/b.txt") == "second" and store.get("top.bin") == b"\x00\x01"
    assert store.keys() == ["logs/x/a.json", "logs/x/b.txt", "top.bin"]
    assert store.keys("logs/x") == ["logs/x/a.json", "logs/x/b.txt"]
    assert store.delete("top.bin") and not store.delete("top.bin")
    on_disk = tmp_path / ("local" if kind == 0 else "uri") / "logs" / "x" / "a.json"
    assert json.loads(on_disk.read_text()) == {"n": 1}
    assert store.locate("logs/x/a.json").endswith("/logs/x/a.json")
    assert store.locate("logs/x/a.json").startswith("file://" if kind else str(tmp_path))


@pytest.mark.parametrize("kind", [0, 1], ids=["local-path", "file-uri"])
def test_a_sub_store_and_a_pickled_store_see_the_same_objects(tmp_path, kind):
    store = _stores(tmp_path)[kind]
    logs = pickle.loads(pickle.dumps(store)).sub("logs/swebench")
    logs.sub("inst/key").put_text("run_instance.log", "hello")
    assert store.get_text("logs/swebench/inst/key/run_instance.log") == "hello"
    assert logs.keys() == ["inst/key/run_instance.log"] and logs.keys("inst") == logs.keys()
    assert logs.locate("inst") == store.locate("logs/swebench/inst")
    assert logs.delete("inst/key/run_instance.log") and store.keys() == []


def test_keys_that_could_leave_the_store_are_refused(tmp_path):
    store = ArtifactStore(tmp_path)
    for bad in ("../x", "/etc/passwd", "a/../../b", "", "a\\b"):
        with pytest.raises(ValueError, match="relative path"):
            store.put(bad, b"")
    assert not any(tmp_path.iterdir())


def test_a_damaged_json_object_reads_as_absent_and_temp_files_are_not_listed(tmp_path):
    store = ArtifactStore(tmp_path)
    (tmp_path / "a.json").write_text("{torn")
    (tmp_path / ".a.json.1234.tmp").write_text("{}")
    assert store.get_json("a.json") is None and store.keys() == ["a.json"]


def test_run_artifacts_is_the_run_dir_or_the_run_under_the_uri(tmp_path):
    run_dir = tmp_path / "results" / "mbpp_r1_x"
    assert run_artifacts(run_dir).locate() == str(run_dir)
    remote = run_artifacts(run_dir, f"file://{tmp_path}/bucket/prefix/")
    assert remote.locate() == f"file://{tmp_path}/bucket/prefix/mbpp_r1_x"
    with pytest.raises(ValueError, match="not a URI"):
        run_artifacts(run_dir, "relative/folder")
    with pytest.raises(ArtifactError, match="infra.artifact_uri"):
        run_artifacts(run_dir, "nosuchscheme://bucket").keys()
    assert as_artifacts(remote) is remote and as_artifacts(run_dir).locate() == str(run_dir)


class _Echo:
    backend, model = "fake", "echo-1"

    def __init__(self):
        self.calls = 0

    def complete(self, messages, **kwargs):
        from ratchet_ray.llm.base import Reply

        self.calls += 1
        return Reply(text=f"answer {self.calls}", model=self.model, backend=self.backend,
                     input_tokens=3, output_tokens=2)


def test_the_solver_cache_behind_a_uri_and_the_cli_reading_it(tmp_path):
    from ratchet_ray.cli.llm import solver_cache
    from ratchet_ray.llm.base import Message

    run_dir = tmp_path / "results" / "run1"
    run_dir.mkdir(parents=True)
    uri = f"file://{tmp_path}/bucket"
    dump_config(LoopConfig.model_validate({"infra": {"artifact_uri": uri}}),
                run_dir / "config.yaml")
    client = _Echo()
    llm = CachedLLM(client, run_artifacts(run_dir, uri).sub(CACHE_DIRNAME))
    prompt = [Message("user", "2+2?")]
    first, again = llm.complete(prompt), llm.complete(prompt)
    assert (first.cached, again.cached, again.text, client.calls) == (False, True, "answer 1", 1)
    assert not (run_dir / CACHE_DIRNAME).exists()  # in the store, not the run dir
    assert len(list((tmp_path / "bucket" / "run1" / CACHE_DIRNAME).rglob("*.json"))) == 1
    runner = CliRunner()
    listed = runner.invoke(solver_cache, ["list"], obj={"run_dir": run_dir})
    assert listed.exit_code == 0 and "echo-1" in listed.output
    assert f"1 entries in {uri}/run1/{CACHE_DIRNAME}" in listed.output
    cleared = runner.invoke(solver_cache, ["clear", "--yes"], obj={"run_dir": run_dir})
    assert cleared.exit_code == 0 and "removed 1" in cleared.output
    assert list(SolverCache(run_artifacts(run_dir, uri).sub(CACHE_DIRNAME)).entries()) == []


def test_the_sim_world_goes_to_the_store_once(tmp_path):
    from ratchet_ray.suites.sim.grader import WORLD_FILE, SimGrader
    from ratchet_ray.suites.sim import world_spec
    from ratchet_ray.suites.sim.world import World

    store = ArtifactStore(f"file://{tmp_path}/store")
    config = LoopConfig.model_validate({"suite": "sim", "llm": {"backend": "sim"}})
    world = World(world_spec(config))
    SimGrader.for_run(world, store)
    written = store.get_json(WORLD_FILE.as_posix())
    assert written["tasks"] and written["seed"] == world.seed
    store.put_json(WORLD_FILE.as_posix(), {"kept": True})
    SimGrader.for_run(world, store)  # a second grader of the run does not rewrite it
    assert store.get_json(WORLD_FILE.as_posix()) == {"kept": True}


def test_the_service_actor_serves_a_folder_to_any_actor(ray_local, tmp_path):
    from actors.artifacts import RemoteArtifacts, launch_artifact_service, run_artifacts_access

    service = launch_artifact_service(tmp_path / "run")
    artifacts = RemoteArtifacts(service, tmp_path / "run")

    @ray_local.remote(num_cpus=0)
    def elsewhere(store):
        store.sub("logs/i").put_text("trajectory.json", "{}")
        store.sub("logs/j").put_many([("a.log", b"a"), ("x/b.log", b"b"), ("report.json", b"1")])
        return store.keys("logs"), store.get_text("logs/i/trajectory.json"), store.locate("logs")

    keys, text, where = ray_local.get(elsewhere.remote(artifacts))
    assert keys == ["logs/i/trajectory.json", "logs/j/a.log", "logs/j/report.json",
                    "logs/j/x/b.log"] and text == "{}"
    assert (tmp_path / "run" / "logs" / "j" / "x" / "b.log").read_bytes() == b"b"
    assert where == str(tmp_path / "run" / "logs")
    assert (tmp_path / "run" / "logs" / "i" / "trajectory.json").read_text() == "{}"
    assert artifacts.delete("logs/i/trajectory.json") and artifacts.get("logs/i/x") is None
    ray_local.kill(service)
    direct, none = run_artifacts_access(tmp_path / "run", f"file://{tmp_path}/b")
    assert none is None and direct.locate() == f"file://{tmp_path}/b/run"
