"""A local model that crashes inside llama.cpp, and an actor that dies, are named for a person:
the signal, the crashing function, the fix and the log; never an install hint.

The crashing child stands in for llama.cpp on a CPU with AMX (this machine may have none): it
writes the frame a real crash leaves and dies of SIGSEGV, as the real one does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm import doctor, local_probe
from ratchet_ray.llm.base import LLMError
from ratchet_ray.llm.crash import crash_signal, crashing_function, demangle, signal_name
from ratchet_ray.llm.local import LocalConfig

AMX_FRAME = ("/venv/lib/python3.11/site-packages/llama_cpp/lib/libggml-cpu.so("
             "_Z24ggml_backend_amx_mul_matPK19ggml_compute_paramsP11ggml_tensor+0x1c4)"
             "[0x7f3a12c4d1c4]")
INSTALL_HINT = "pip install 'ratchet-ray[local]'"


@pytest.fixture
def crashing_child(tmp_path, monkeypatch):
    """Every local-model child is a process that writes llama.cpp's crash frames and dies of
    SIGSEGV after loading starts."""
    script = tmp_path / "crashing_llama.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys
        sys.stderr.write("llama_model_loader: loaded meta data with 40 key-value pairs\\n")
        sys.stderr.write("native backtrace (SIGSEGV):\\n{AMX_FRAME}\\n"
                         "/venv/llama_cpp/lib/libllama.so(llama_decode+0x2a)[0x7f3a13000000]\\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    """))
    monkeypatch.setattr(local_probe, "child_command", lambda config: [sys.executable, str(script)])
    return script


def test_a_crashing_model_names_signal_function_fix_and_log(crashing_child, tmp_path):
    with pytest.raises(local_probe.LocalModelCrashed) as caught:
        local_probe.probe_local_model(LocalConfig(), log_dir=tmp_path / "logs")
    err = caught.value
    assert str(err).startswith("the local model crashed (SIGSEGV in ggml_backend_amx_mul_mat); "
                               "fix: install a llama-cpp-python built for a generic x86-64 CPU")
    assert "CMAKE_ARGS='-DGGML_NATIVE=OFF'" in err.hint and INSTALL_HINT not in str(err)
    assert err.log_path.parent == tmp_path / "logs" and str(err.log_path) in str(err)
    assert "ggml_backend_amx_mul_mat" in err.log_path.read_text()  # the child's stderr, kept
    assert err.detail == (f"the local model crashed (SIGSEGV in ggml_backend_amx_mul_mat); "
                          f"its log: {err.log_path}")
    # With extra buffer types on (where the AMX kernels come from), the fix turns them off.
    with pytest.raises(local_probe.LocalModelCrashed) as caught:
        local_probe.probe_local_model(LocalConfig(extra_buffer_types=True), log_dir=tmp_path)
    assert caught.value.hint.startswith("turn llama.cpp's extra buffer types off: "
                                        "llm.local.extra_buffer_types=false")


def test_the_doctor_check_of_a_crashing_model_fails_with_its_own_fix(crashing_child):
    check = doctor.timed("llm (local)", doctor.backend_hint("local"),
                         lambda: doctor._check_llm(LLMSettings(backend="local")))
    assert not check.ok
    assert check.detail.startswith("the local model crashed (SIGSEGV in ggml_backend_amx_mul_mat)")
    assert "its log: " in check.detail and Path(check.detail.split("its log: ")[1]).is_file()
    assert INSTALL_HINT not in check.hint and "llama-cpp-python built for a generic" in check.hint


@pytest.mark.slow
def test_ratchet_doctor_survives_a_crashing_model_and_says_why(crashing_child, monkeypatch,
                                                                tmp_path):
    from ratchet_ray.cli.llm import doctor as doctor_command

    dataset = tmp_path / "MbppPlus.jsonl"
    dataset.write_text("{}\n")
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", str(dataset))
    result = CliRunner().invoke(doctor_command, ["--llm", "local"])
    assert result.exit_code == 1, result.output  # a FAIL line, not the doctor's death (139)
    lines = result.output.splitlines()
    failed = next(i for i, line in enumerate(lines) if "FAIL llm (local)" in line)
    assert "the local model crashed (SIGSEGV in ggml_backend_amx_mul_mat)" in lines[failed]
    assert "its log: " in lines[failed]
    assert lines[failed + 1].strip().startswith("fix: install a llama-cpp-python built for")
    assert INSTALL_HINT not in result.output
    assert "PASS embedding" in result.output and "4 passed, 1 failed" in result.output


def test_a_missing_package_in_the_child_keeps_its_install_hint(tmp_path, monkeypatch):
    # The real child, where llama_cpp cannot be imported: an error of ours, not a crash.
    shadow = tmp_path / "shadow" / "llama_cpp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('llama_cpp is not installed here')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    check = doctor.timed("llm (local)", doctor.backend_hint("local"),
                         lambda: doctor._check_llm(LLMSettings(backend="local")))
    assert not check.ok and check.detail.startswith("LLMError: the local backend needs "
                                                    "llama-cpp-python: " + INSTALL_HINT)
    assert check.hint.startswith(INSTALL_HINT)


def test_a_missing_model_file_is_an_error_not_a_crash(tmp_path):
    missing = tmp_path / "missing.gguf"
    with pytest.raises(LLMError, match=rf"GGUF model {missing} not found; set "
                                       r"llm.local.model_path") as caught:
        local_probe.probe_local_model(LocalConfig(model_path=str(missing)), log_dir=tmp_path)
    assert not isinstance(caught.value, local_probe.LocalModelCrashed)


def test_the_child_prints_native_frames_and_dies_of_the_signal(tmp_path):
    # A real segfault in native code, in a process with the child's handlers.
    code = ("import ctypes, faulthandler\n"
            "from ratchet_ray.llm.crash import install_native_backtrace\n"
            "install_native_backtrace(); faulthandler.enable()\n"
            "ctypes.string_at(0)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=local_probe._child_env())
    assert proc.returncode == -signal.SIGSEGV and signal_name(proc.returncode) == "SIGSEGV"
    assert "Fatal Python error: Segmentation fault" in proc.stderr
    assert "native backtrace (SIGSEGV):" in proc.stderr and "libc.so" in proc.stderr
    assert crash_signal(proc.stderr) == "SIGSEGV"


def test_crash_reports_in_the_formats_seen_are_read():
    absl = ("*** SIGSEGV received at time=1796125079 on cpu 3 ***\n"
            "PC: @     0x7f4d95d85ad8  (unknown)  ggml_backend_amx_mul_mat()\n"
            "    @     0x7f4d95c5a050       1234  llama_decode()\n")
    assert crash_signal(absl) == "SIGSEGV" and crashing_function(absl) == "ggml_backend_amx_mul_mat"
    gdb = "#0  0x00007f12 in _ZN4ggml3cpu3amx7mul_matEv (params=0x0) at mmq.cpp:2401\n"
    assert crashing_function(gdb) == "ggml::cpu::amx::mul_mat"
    # A path through llama_cpp/ is not a frame; the first named llama.cpp frame is.
    assert crashing_function(f"/x/llama_cpp/lib/libggml.so(+0x12)[0x1]\n{AMX_FRAME}") == \
        "ggml_backend_amx_mul_mat"
    assert crashing_function("Fatal Python error: Segmentation fault\n  File llama_cpp.py") is None
    assert crash_signal("Fatal Python error: Illegal instruction") == "SIGILL"
    assert demangle("plain_c_symbol") == "plain_c_symbol" and signal_name(0) is None
    assert signal_name(-9) == "SIGKILL"


def _crasher_class(ray):
    @ray.remote(num_cpus=0)
    class LlamaHost:
        def pid(self) -> int:
            return os.getpid()

        def complete(self) -> str:
            sys.stderr.write(f"native backtrace (SIGSEGV):\n{AMX_FRAME}\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
            return "never"
    return LlamaHost


def test_an_actor_that_dies_is_named_with_its_signal_function_and_log(ray_local):
    from actors.pool_errors import ActorDied, describe_death, failure_text
    from ratchet_ray.loop.preflight import _naming_deaths

    host = _crasher_class(ray_local).remote()
    pid = ray_local.get(host.pid.remote())
    with pytest.raises(ray_local.exceptions.RayActorError) as caught:
        ray_local.get(host.complete.remote())
    detail, hint = describe_death(caught.value)
    assert detail.startswith(f"actor LlamaHost (pid {pid}) died: SIGSEGV in "
                             "ggml_backend_amx_mul_mat; Ray: SYSTEM_ERROR: ")
    log = Path(detail.split("its log: ")[1])
    assert log.name.endswith(f"-{pid}.err") and "ggml_backend_amx_mul_mat" in log.read_text()
    assert "ratchet doctor --llm local" in hint and "pip install" not in hint
    assert failure_text(caught.value).startswith("ActorDiedError: actor LlamaHost (pid ")
    # A preflight check whose actor dies says the same, with that fix (not the install hint).
    check = doctor.timed("llm (local)", doctor.backend_hint("local"),
                         _naming_deaths(lambda: ray_local.get(host.complete.remote())))
    assert not check.ok and check.detail.startswith(f"actor LlamaHost (pid {pid}) died")
    assert check.hint == hint
    assert isinstance(ActorDied.from_error(caught.value), ActorDied)


def test_the_run_preflight_reports_a_crashing_local_model(ray_local, crashing_child, tmp_path):
    from fakes import HashEmbedder

    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.loop.breaker import PreflightFailed
    from ratchet_ray.loop.preflight import preflight
    from ratchet_ray.loop.runtime import Models

    config = LoopConfig()
    assert config.llm.backend == "local"
    with pytest.raises(PreflightFailed) as caught:
        preflight(config, Models(embedder=HashEmbedder()), scope="crash-preflight",
                  log_dir=tmp_path)
    text = str(caught.value)
    assert ("FAIL llm (local): the local model crashed (SIGSEGV in ggml_backend_amx_mul_mat); "
            f"its log: {tmp_path}/local-model-") in text
    assert "(fix: install a llama-cpp-python built for a generic x86-64 CPU" in text
    assert INSTALL_HINT not in text and "ActorDiedError" not in text
