"""A wheel of the repo, installed (not editable) into a fresh venv, works away from the checkout:
it finds its configs and default meta-skills, passes ``ratchet doctor`` and runs one round.

The venv gets the wheel (``--no-deps``, offline) and the test environment's third-party packages
as hard links (nothing is downloaded or copied); the checkout's editable install is left out, so
every ``ratchet_ray`` / ``actors`` / ``jobs`` import is the wheel's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SOURCES = ("pyproject.toml", "setup.py", "README.md", "ratchet_ray", "actors", "jobs", "configs")

pytestmark = pytest.mark.slow


def build_wheel(out: Path) -> Path:
    """Build from a copy of the sources, so the shared checkout gets no build/ or egg-info."""
    src = out / "src"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(out / "dist"), str(src)], check=True, timeout=600)
    wheel, = (out / "dist").glob("ratchet_ray-*.whl")
    return wheel


def fresh_venv(where: Path, wheel: Path) -> Path:
    """A venv holding this environment's third-party packages (hard links: no copy, offline)
    and the wheel; the checkout's editable install is left out. Self-contained like a real
    install, so the MBPP+ sandbox (which binds the venv's own site-packages) finds them."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True,
                   timeout=300)
    python = where / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if entry.name.startswith(("__editable__", "ratchet_ray-")) or entry.name == "__pycache__":
            continue
        subprocess.run(["cp", "-al", str(entry), str(site / entry.name)], check=True, timeout=600)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300)
    return python


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(out)
    python = fresh_venv(out / "venv", wheel)
    workdir = out / "elsewhere"  # not the checkout: nothing may be found relative to the cwd
    workdir.mkdir()
    return wheel, python, workdir


def run_in(workdir: Path, *argv: str | Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    return subprocess.run([str(a) for a in argv], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_wheel_ships_configs_and_meta_skills(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.removeprefix("ratchet_ray/") for n in names if n.startswith("ratchet_ray/configs/")}
    in_repo = {str(p.relative_to(ROOT)) for p in (ROOT / "configs").rglob("*") if p.is_file()}
    assert shipped == in_repo
    assert not any(n.startswith(("tests/", "configs/")) for n in names)


def test_installed_package_resolves_its_own_files(installed):
    _, python, workdir = installed
    code = ("import ratchet_ray, actors, jobs\n"
            "from ratchet_ray.settings.resources import configs_dir\n"
            "from ratchet_ray.bank.metaskills import default_metaskill\n"
            "from ratchet_ray.sweep.spec import arm_config_file\n"
            "from ratchet_ray.run_config.files import load_config, suite_files\n"
            "site = str(__import__('pathlib').Path(ratchet_ray.__file__).parents[1])\n"
            "for path in (ratchet_ray.__file__, actors.__file__, jobs.__file__, configs_dir(),\n"
            "             arm_config_file('A4'), suite_files('swebench')[0]):\n"
            "    assert str(path).startswith(site), path\n"
            "assert default_metaskill('mbpp').body and default_metaskill('swebench').body\n"
            "assert load_config([arm_config_file('A4')]).arm\n"
            "print('OK', configs_dir())\n")
    out = run_in(workdir, python, "-c", code)
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-3000:]
    assert str(ROOT) not in out.stdout


def test_installed_ratchet_doctor_passes(installed):
    _, python, workdir = installed
    out = run_in(workdir, python.parent / "ratchet", "doctor")  # the wheel's console script
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " 0 failed" in out.stdout


def test_installed_package_runs_one_scripted_round(installed, tmp_path):
    _, python, workdir = installed
    out = run_in(workdir, python, TESTS / "scripted_run.py", tmp_path / "results", "1")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    run_dir = Path(out.stdout.strip().splitlines()[-1])
    assert (run_dir / "config.yaml").is_file()
    assert list((run_dir / "evidence").rglob("*.parquet")), "the round wrote no evidence"
    meta = list((run_dir / "meta-skills").rglob("*.md"))
    assert meta, "the default meta-skill was not installed from the wheel's configs"
