"""A local model path that is no GGUF file: a folder, an empty file, another format, a file
this user may not read. The run's preflight and `ratchet doctor` each name the file, why, and
the setting that fixes it, before llama.cpp is handed it; the packaged model still passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from one_line import AS_OWNER_ONLY

from ratchet_ray.llm import doctor
from ratchet_ray.llm.local import LocalConfig, LocalLLM, ModelFileError, gemma_model_path
from ratchet_ray.llm.requirements import backend_problems, model_file_problem
from ratchet_ray.settings.schema import LLMSettings

ROOT = Path(__file__).resolve().parents[2]
FIX = "point it (or $RATCHET_LOCAL_MODEL_PATH) at a .gguf file on this machine"


def _bad_model(tmp_path, kind: str):
    path = tmp_path / "model.gguf"
    if kind == "folder":
        path.mkdir()
        return path, "a folder, not a .gguf file"
    path.write_bytes({"empty": b"", "other format": b"PK\x03\x04 a zip"}[kind])
    return path, {"empty": "an empty file (0 bytes), not a GGUF model",
                  "other format": "not a GGUF model (it starts with b'PK\\x03\\x04', not "
                                  "b'GGUF')"}[kind]


KINDS = ["folder", "empty", "other format"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_preflight_names_a_model_path_that_is_no_gguf_file(tmp_path, kind):
    """A folder was called "no such file"; an empty or foreign file passed, and the run died
    later in llama.cpp ("Failed to load model from file")."""
    path, why = _bad_model(tmp_path, kind)
    settings = LLMSettings(backend="local", embedder="sim", local={"model_path": str(path)})
    problems = backend_problems(settings, env={})
    assert any(p.startswith(f"llm.local.model_path={path}: {why}; fix: {FIX}")
               for p in problems), problems


@pytest.mark.parametrize("kind", KINDS)
def test_doctor_names_it_with_the_setting_as_the_fix_not_an_install(tmp_path, kind):
    """It was the child's "exited 1: ValueError: Failed to load model from file" (a folder: "not
    found") with the install hint `pip install 'ratchet-ray[local]'`, which cannot help."""
    path, why = _bad_model(tmp_path, kind)
    settings = LLMSettings(backend="local", local={"model_path": str(path)})
    check = doctor.timed("llm (local)", doctor.backend_hint("local"),
                         lambda: doctor._check_llm(settings))
    assert not check.ok and check.detail == f"GGUF model {path}: {why}", check
    assert check.hint == f"llm.local.model_path: {FIX}, or unset it for the packaged Gemma 3 270M"


def test_the_client_refuses_it_before_llama_cpp_reads_it(tmp_path):
    path, why = _bad_model(tmp_path, "empty")
    with pytest.raises(ModelFileError) as caught:
        LocalLLM(LocalConfig(model_path=str(path))).llama
    assert str(caught.value) == (f"GGUF model {path}: {why}; set llm.local.model_path (or "
                                 "$RATCHET_LOCAL_MODEL_PATH) to a .gguf file")


def test_a_model_this_user_may_not_read_is_named_as_such(tmp_path):
    """Asked in a process the mode bits bind: root reads whatever they say, so as root it runs
    without the capabilities that let it (``setpriv``)."""
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF rest")
    path.chmod(0)
    done = subprocess.run([*AS_OWNER_ONLY, sys.executable, "-c",
                           "import sys; from ratchet_ray.llm.requirements import "
                           "model_file_problem; print(model_file_problem(sys.argv[1]))",
                           str(path)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.stdout.strip() == "may not be read by this user (Permission denied)", done


def test_the_packaged_model_and_a_gguf_header_pass(tmp_path):
    assert model_file_problem(gemma_model_path()) is None
    header_only = tmp_path / "m.gguf"
    header_only.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert model_file_problem(header_only) is None
    assert model_file_problem(tmp_path / "gone.gguf") == "no such file"
