"""Load and call the local model in a child process: a crash inside llama.cpp becomes a report.

Contracts (nothing is loaded in the calling process):
- ``probe_local_model`` runs ``child_command`` (this module's ``main``: load ``LocalLLM``, one
  one-token call, one JSON line). The child's stderr (llama.cpp's log; on a crash the native and
  Python frames) goes to ``local-model-<time>-<random>.log`` in ``log_dir`` (default
  ``$TMPDIR/ratchet-logs``), kept when the probe fails, removed when it passes. Returns
  ``ratchet doctor``'s PASS detail.
- A child killed by a signal raises ``LocalModelCrashed``: ``the local model crashed (SIGSEGV in
  ggml_backend_amx_mul_mat); fix: ...; its log: PATH``; the fix (``crash_fix``) is extra buffer
  types off when they were on, else a generic x86-64 build or another model. A child past
  ``timeout_s`` is killed (its process group) and raises ``LocalModelCrashed`` saying so. A
  child's own ``LLMError`` (a missing package or model file) is raised with its message
  unchanged, so its fix stays; any other failure raises ``LLMError`` with the log's last line
  and path. A ``model_path`` that is no GGUF file (missing, a folder, empty, unreadable, another
  format) is ``local.ModelFileError``, raised here before any child starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ratchet_ray.llm.base import LLMError, Message
from ratchet_ray.llm.crash import (Diagnosed, crashing_function, install_native_backtrace,
                                  last_line, signal_name)
from ratchet_ray.llm.local import LocalConfig, LocalLLM, ModelFileError
from ratchet_ray.llm.requirements import model_file_problem

PORTABLE_BUILD = ("CMAKE_ARGS='-DGGML_NATIVE=OFF' pip install --force-reinstall --no-cache-dir "
                  "llama-cpp-python")


class LocalModelCrashed(LLMError, Diagnosed):
    """The local model's child process died (a signal) or hung: ``detail`` (what happened and
    the log, a doctor check's detail), ``hint`` (the fix), ``log_path`` (the child's stderr)."""

    def __init__(self, what: str, hint: str, log_path: Path):
        super().__init__(f"{what}; fix: {hint}; its log: {log_path}")
        self.detail = f"{what}; its log: {log_path}"
        self.hint, self.log_path = hint, log_path


def crash_fix(extra_buffer_types: bool, function: str | None) -> str:
    """How to get a local model that does not crash, given what crashed."""
    if extra_buffer_types:
        return ("turn llama.cpp's extra buffer types off: llm.local.extra_buffer_types=false "
                "(or unset $RATCHET_LOCAL_EXTRA_BUFFER_TYPES)")
    where = f" ({function} is in llama.cpp's CPU kernels)" if function else ""
    return (f"install a llama-cpp-python built for a generic x86-64 CPU{where}: {PORTABLE_BUILD}; "
            "or set llm.local.model_path to another .gguf, or use another backend (--llm openai)")


def child_command(config: LocalConfig) -> list[str]:
    """The child's command line (tests replace it with a child that crashes on purpose)."""
    return [sys.executable, "-m", "ratchet_ray.llm.local_probe", config.model_dump_json()]


def _child_env() -> dict[str, str]:
    # The child imports ratchet_ray from where this process did, whatever its working directory.
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


def _last_json(stdout: str) -> dict | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def probe_local_model(config: LocalConfig, log_dir: Path | None = None,
                      timeout_s: float = 60.0) -> str:
    """Load and call the model in a child process (module contracts)."""
    reason = model_file_problem(config.model_path) if config.model_path else None
    if reason is not None:  # its own fix, not the install hint a child's LLMError would get
        raise ModelFileError(config.model_path, reason)
    folder = Path(log_dir) if log_dir is not None else Path(tempfile.gettempdir()) / "ratchet-logs"
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f"local-model-{time.strftime('%Y%m%dT%H%M%S')}-",
                                    suffix=".log", dir=folder)  # unique, even twice a second
    log_path = Path(name)
    started = time.perf_counter()
    with os.fdopen(handle, "w") as log:
        proc = subprocess.Popen(child_command(config), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=log, text=True, env=_child_env(),
                                start_new_session=True)  # on a timeout the whole group goes
        try:
            stdout, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.communicate()
            raise LocalModelCrashed(
                f"the local model did not answer within {timeout_s:.0f}s in a child process",
                "read its log; on a slow or busy machine raise infra.preflight_timeout_s",
                log_path) from None
    stderr = log_path.read_text(errors="replace")
    signame = signal_name(proc.returncode)
    if signame is not None:
        function = crashing_function(stderr)
        fix = crash_fix(config.extra_buffer_types, function)
        where = f"{signame} in {function}" if function else signame
        raise LocalModelCrashed(f"the local model crashed ({where})", fix, log_path)
    result = _last_json(stdout)
    if proc.returncode == 0 and result is not None and result.get("ok"):
        log_path.unlink(missing_ok=True)
        return (f"local:{result['model']} answered in a child process ({result['tokens']} token, "
                f"{time.perf_counter() - started:.1f}s with the load; extra buffer types "
                f"{'on' if result['extra_buffer_types'] else 'off'})")
    if result is not None and result.get("error"):
        raise LLMError(f"{result['error']} (log: {log_path})")
    raise LLMError(f"the local model's child process exited {proc.returncode}: "
                   f"{last_line(stderr, 'no output')}; its log: {log_path}")


def main(argv: list[str]) -> int:
    """The child: load, one one-token call, one JSON line on stdout (module contracts)."""
    import faulthandler

    install_native_backtrace()  # before llama.cpp loads (``LocalLLM.llama``)
    faulthandler.enable()  # after: it chains to the native handler
    try:
        llm = LocalLLM(LocalConfig.model_validate_json(argv[0]))
        reply = llm.complete([Message("user", "Reply with OK.")], max_tokens=1, temperature=0.0)
        extra = bool(llm.llama.model_params.use_extra_bufts)
    except LLMError as exc:
        print(json.dumps({"ok": False, "error": str(exc)}), flush=True)
        return 2
    print(json.dumps({"ok": True, "model": reply.model, "tokens": reply.output_tokens,
                      "extra_buffer_types": extra}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
