"""The artifact store behind a real ``s3://`` URI: pyarrow's S3 filesystem talking to a moto S3
server on 127.0.0.1 (``AWS_ENDPOINT_URL_S3`` points the AWS SDK there, as it would at MinIO or
any S3-compatible store), the same calls a run makes against a bucket."""

from __future__ import annotations

import pickle

import pytest
from click.testing import CliRunner

from ratchet_ray.storage.artifacts import ArtifactStore, run_artifacts
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.llm.base import Message, Reply
from ratchet_ray.llm.cache import CACHE_DIRNAME, CachedLLM, SolverCache

BUCKET = "ratchet-artifacts"


@pytest.fixture
def s3_bucket(monkeypatch):
    """A moto S3 server on a free loopback port with one empty bucket; the AWS settings of this
    process point at it (fake credentials, no instance metadata)."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for name, value in {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                        "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)
    # A session of its own: boto3.client() would cache these credentials in boto3's default
    # session for the rest of the process (a later test expects none to be found).
    client = boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        server.stop()


def _objects(client, prefix: str = "") -> list[str]:
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return sorted(item["Key"] for item in listed.get("Contents", []))


def test_put_get_keys_delete_and_sub_stores_in_a_bucket(s3_bucket):
    store = ArtifactStore(f"s3://{BUCKET}/prefix")
    assert store.get("logs/a.json") is None and store.keys() == []
    store.put_json("logs/x/a.json", {"n": 1})
    store.put_text("logs/x/b.txt", "first")
    store.put_text("logs/x/b.txt", "second")  # replaced whole
    store.put("top.bin", b"\x00\x01")
    assert store.get_json("logs/x/a.json") == {"n": 1} and store.get_text("logs/x/b.txt") == "second"
    assert store.keys() == ["logs/x/a.json", "logs/x/b.txt", "top.bin"]
    assert store.keys("logs/x") == ["logs/x/a.json", "logs/x/b.txt"]
    assert _objects(s3_bucket, "prefix/") == ["prefix/logs/x/a.json", "prefix/logs/x/b.txt",
                                             "prefix/top.bin"]  # real objects, no temp files
    assert store.locate("logs/x/a.json") == f"s3://{BUCKET}/prefix/logs/x/a.json"
    assert store.delete("top.bin") and not store.delete("top.bin")
    logs = pickle.loads(pickle.dumps(store)).sub("logs/swebench")  # what an actor receives
    logs.sub("inst/key").put_text("run_instance.log", "hello")
    assert store.get_text("logs/swebench/inst/key/run_instance.log") == "hello"
    assert logs.keys() == ["inst/key/run_instance.log"]


class _Echo:
    backend, model = "fake", "echo-1"

    def __init__(self):
        self.calls = 0

    def complete(self, messages, **kwargs):
        self.calls += 1
        return Reply(text=f"answer {self.calls}", model=self.model, backend=self.backend,
                     input_tokens=3, output_tokens=2)


def test_a_runs_solver_cache_in_a_bucket_and_the_cli_reading_it(s3_bucket, tmp_path):
    from ratchet_ray.cli.llm import solver_cache

    run_dir = tmp_path / "results" / "run1"
    run_dir.mkdir(parents=True)
    uri = f"s3://{BUCKET}/runs"
    dump_config(LoopConfig.model_validate({"infra": {"artifact_uri": uri}}),
                run_dir / "config.yaml")
    client = _Echo()
    llm = CachedLLM(client, run_artifacts(run_dir, uri).sub(CACHE_DIRNAME))
    prompt = [Message("user", "2+2?")]
    first, again = llm.complete(prompt), llm.complete(prompt)
    assert (first.cached, again.cached, again.text, client.calls) == (False, True, "answer 1", 1)
    assert not (run_dir / CACHE_DIRNAME).exists()  # in the bucket, not the run dir
    assert len(_objects(s3_bucket, f"runs/run1/{CACHE_DIRNAME}/")) == 1
    runner = CliRunner()
    listed = runner.invoke(solver_cache, ["list"], obj={"run_dir": run_dir})
    assert listed.exit_code == 0 and "echo-1" in listed.output, listed.output
    assert f"1 entries in {uri}/run1/{CACHE_DIRNAME}" in listed.output
    cleared = runner.invoke(solver_cache, ["clear", "--yes"], obj={"run_dir": run_dir})
    assert cleared.exit_code == 0 and "removed 1" in cleared.output
    assert list(SolverCache(run_artifacts(run_dir, uri).sub(CACHE_DIRNAME)).entries()) == []
    # Only arrow's folder marker is left: deleting a folder's last object, arrow's S3
    # filesystem writes an empty "<folder>/" object so the folder still lists.
    assert [key for key in _objects(s3_bucket, "runs/") if not key.endswith("/")] == []
