"""docs/configuration.md, docs/cli.md, docs/evidence-schema.md and docs/architecture-map.md equal
what the code renders (``make docs``), and the generator is deterministic and complete."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import docs_gen
from tools.docs_settings import ENV_NOTES, ratchet_variables, render_configuration

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    """The pages regenerated into a temp dir by the real entry point (a fresh process)."""
    out = tmp_path_factory.mktemp("docs")
    proc = subprocess.run([sys.executable, "-m", "tools.docs_gen", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("page", sorted(docs_gen.PAGES))
def test_committed_page_equals_the_code(rendered, page):
    committed = DOCS / page
    assert committed.is_file(), f"docs/{page} is missing: run make docs"
    assert committed.read_text() == (rendered / page).read_text(), (
        f"docs/{page} differs from what the code renders: run make docs and commit docs/")


def test_check_mode_names_a_stale_page_and_the_fix(tmp_path):
    docs_gen.write_pages(tmp_path)
    assert docs_gen.stale_pages(tmp_path) == []
    (tmp_path / "cli.md").write_text("# edited by hand\n")
    proc = subprocess.run([sys.executable, "-m", "tools.docs_gen", "--check",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "cli.md" in proc.stderr and "make docs" in proc.stderr


def test_rendering_ignores_the_callers_environment(monkeypatch):
    # Settings read defaults from RATCHET_* variables: the page shows the shipped defaults.
    clean = render_configuration()
    monkeypatch.setenv("RATCHET_LOCAL_N_CTX", "1234")
    monkeypatch.setenv("RATCHET_OPENAI_MODEL", "someone-elses-model")
    assert render_configuration() == clean
    assert os.environ["RATCHET_LOCAL_N_CTX"] == "1234"  # restored after rendering


def test_every_setting_and_ratchet_variable_is_on_the_page():
    from ratchet_ray.settings.schema import LoopConfig

    page = (DOCS / "configuration.md").read_text()

    def keys(model, prefix=""):
        for name, info in model.model_fields.items():
            if info.exclude:
                continue
            sub = info.annotation
            if isinstance(sub, type) and hasattr(sub, "model_fields"):
                yield from keys(sub, f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}"

    missing = [k for k in keys(LoopConfig) if f"| `{k}` |" not in page]
    assert not missing, missing
    for section in ("swebench.dataset_name", "sim.n_tasks"):
        assert f"| `{section}` |" in page
    variables = ratchet_variables()
    assert {"RATCHET_SUITES", "RATCHET_LOCAL_N_CTX", "RATCHET_PRICE_TABLE"} <= set(variables)
    for name in variables:
        assert f"| `{name}` |" in page, name


def test_an_undocumented_ratchet_variable_fails_generation_naming_it(monkeypatch, tmp_path):
    from tools import docs_settings

    extra = tmp_path / "ratchet_ray" / "newthing.py"
    extra.parent.mkdir()
    extra.write_text('import os\nos.environ.get("RATCHET_BRAND_NEW_KNOB")\n')
    real = docs_settings.package_files
    monkeypatch.setattr(docs_settings, "package_files",
                        lambda: [*real(), ("ratchet_ray/newthing.py", extra)])
    with pytest.raises(ValueError, match="RATCHET_BRAND_NEW_KNOB read by ratchet_ray/newthing.py"):
        render_configuration()
    assert "RATCHET_SUITES" in ENV_NOTES


def test_cli_page_lists_every_command_and_option():
    import click

    from ratchet_ray.cli import main
    from tools.docs_commands import walk

    page = (DOCS / "cli.md").read_text()
    for command, ctx in walk(main, click.Context(main, info_name="ratchet")):
        assert f"### `{ctx.command_path}`" in page, ctx.command_path
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert f"`{param.opts[0]}" in page, (ctx.command_path, param.opts)
    for job in ("jobs.skill_loop", "jobs.baseline", "jobs.select_subset", "jobs.ablations"):
        assert f"| `python -m {job}` | `ratchet " in page, job


def test_the_architecture_map_boxes_layers_and_arrows(tmp_path):
    """Boxes by package (each suite its own, plain library; its commands in ``cli/``), in their
    layer, an implied arrow left to the path that implies it and the table keeping every direct
    import."""
    from tools.docs_imports import reduced, render_architecture_map, structure

    files = {"ratchet_ray/__init__.py": "", "ratchet_ray/types.py": "X = 1\n",
             "ratchet_ray/plot.py": "from ratchet_ray.report import data\n",
             "ratchet_ray/report/__init__.py": "",
             "ratchet_ray/report/data.py": "import ratchet_ray.types\n",
             "ratchet_ray/suites/__init__.py": "", "ratchet_ray/suites/toy/__init__.py": "",
             "ratchet_ray/cli/__init__.py": "",
             "ratchet_ray/cli/toy.py": "from ratchet_ray.suites.toy import run\n",
             "ratchet_ray/suites/toy/run.py": "from ratchet_ray import types\n",
             "ratchet_ray/loop/__init__.py": "from ratchet_ray import plot, types\n",
             "actors/__init__.py": "", "jobs/__init__.py": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    lines, layers, edges = structure(tmp_path)
    assert layers["ratchet_ray/cli/"] == "cli/jobs"
    assert layers["ratchet_ray/suites/toy/"] == "plain library"
    assert edges["ratchet_ray/cli/"] == {"ratchet_ray/suites/toy/"}
    assert layers["ratchet_ray/loop/"] == "loop"
    assert lines["ratchet_ray/plot.py"] == 1  # imports a package of ratchet_ray: its own box
    assert edges["ratchet_ray/loop/"] == {"ratchet_ray/plot.py", "ratchet_ray/*.py"}
    drawn = reduced(edges)
    assert drawn["ratchet_ray/loop/"] == {"ratchet_ray/plot.py"}  # *.py is reached through plot
    page = render_architecture_map(tmp_path)
    assert "u_ratchet_ray_loop --> u_ratchet_ray_plot_py" in page
    assert "u_ratchet_ray_loop --> u_ratchet_ray_py" not in page
    assert ("| `ratchet_ray/loop/` | loop | < 100 lines | `ratchet_ray/*.py`, `ratchet_ray/plot.py` |"
            in page)
