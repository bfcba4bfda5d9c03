"""``ratchet doctor`` and ``ratchet solver-cache list|clear``.

Contracts:
- ``doctor`` prints one ``PASS``/``FAIL`` line per check (with a fix hint on FAIL) and exits 1
  when any check failed. ``--llm`` picks the backend, ``--config`` reads LLM settings from a run
  config (``load_config``), ``--suite swebench`` adds the suite's Docker checks (daemon, free
  disk, leftover containers, images of the config's local dataset) and git. An ``openai``
  backend without a server URL (or with one that is not http(s)) is refused before Ray starts.
- ``solver-cache`` works on the run's cache or on ``--cache-dir`` (``_cache``).
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path

import click

from ratchet_ray.cli.options import one_line, suite_config, yes_option
from ratchet_ray.run_config.options import config_option, llm_option
from ratchet_ray.llm.cache import CACHE_DIRNAME, SolverCache, SolverCacheError
from ratchet_ray.loop.entry import SUITE
from ratchet_ray.settings.schema import default_suite


@click.command()
@llm_option("Backend to check (default: the config's, else local).", dest="backend")
@click.option("--suite", type=SUITE, default=default_suite(),
              help="Suite whose own checks run too (swebench: Docker and git): a registered "
                   "suite, a plugin's too ($RATCHET_SUITES, or suite_plugins in --config).")
@config_option("Run config YAML(s) whose llm section is checked.")
@click.option("--base-url", default=None, help="Server URL for --llm openai.")
def doctor(backend: str | None, suite: str, config_files: tuple[Path, ...], base_url: str | None) -> None:
    """Pre-flight: Ray, model or credentials + a one-token call, an embedding, dataset, Docker."""
    from ratchet_ray.llm.doctor import run_checks
    from ratchet_ray.suites import environment_checks

    # The suite's own layer and name: suite defaults (e.g. the MBPP+ dataset path) follow it.
    # A suite no registry holds is refused with the valid ones listed.
    config = suite_config(suite, config_files, [f"suite={suite}"])
    settings = config.llm
    updates = {k: v for k, v in {"backend": backend, "base_url": base_url}.items() if v}
    if backend and backend != settings.backend:
        updates["embedder"] = None  # an explicit --llm checks that backend's embedder too
    settings = settings.model_copy(update=updates)
    unnamed = _server_url_problem(settings)
    if unnamed:  # nothing to call: said before Ray starts (seconds) for a check that cannot run
        raise click.UsageError(unnamed)
    started = time.perf_counter()
    checks = run_checks(settings, lambda: environment_checks(config))
    for check in checks:
        status = click.style("PASS", fg="green") if check.ok else click.style("FAIL", fg="red")
        line = f"{status} {check.name:<20} {check.detail} ({check.seconds:.1f}s)"
        if not check.ok:
            line += f"\n     fix: {check.hint}"
        click.echo(line)
    failed = sum(not c.ok for c in checks)
    click.echo(f"{len(checks) - failed} passed, {failed} failed in {time.perf_counter() - started:.1f}s")
    if failed:
        raise SystemExit(1)


def _server_url_problem(settings) -> str | None:
    """The ``openai`` backend's server URL missing or not http(s) (``llm.requirements``), with
    doctor's own flag as the fix; None when the settings name a server (or need none)."""
    from ratchet_ray.llm.requirements import backend_problems

    if "openai" not in (settings.backend, settings.embedder or settings.backend):
        return None
    found = [p for p in backend_problems(settings) if p.startswith(("llm.base_url",
                                                                     "$OPENAI_BASE_URL"))]
    if not found:
        return None
    if "is not set" in found[0]:
        return ("the openai backend needs its server's URL and none is set; fix: --base-url "
                "http://HOST:PORT/v1 (or export OPENAI_BASE_URL, or --config a run config with "
                "llm.base_url)")
    return found[0]


def _cache(ctx: click.Context, cache_dir: Path | None) -> SolverCache:
    """``--cache-dir``, else the run's cache: ``solver_cache/`` of its artifacts (the run dir, or
    the ``infra.artifact_uri`` its config.yaml names)."""
    from ratchet_ray.storage.artifacts import run_artifacts
    from ratchet_ray.cli.evidence import run_config

    if cache_dir is not None:
        return SolverCache(cache_dir)
    run_dir = (ctx.obj or {}).get("run_dir")
    if run_dir is None:
        raise click.UsageError("which cache? pass `ratchet --db RUN_DIR solver-cache ...` or --cache-dir DIR")
    uri = run_config(Path(run_dir)).infra.artifact_uri
    return SolverCache(run_artifacts(run_dir, uri).sub(CACHE_DIRNAME))


_CACHE_DIR_OPTION = click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
                                 default=None, help="Cache folder (default: RUN_DIR/solver_cache).")


@click.group("solver-cache")
def solver_cache() -> None:
    """Eval-pass generation cache keyed by (model, prompt, params)."""


@solver_cache.command("list")
@_CACHE_DIR_OPTION
@click.pass_context
def cache_list(ctx: click.Context, cache_dir: Path | None) -> None:
    """List cached generations (key, model, age, size)."""
    cache = _cache(ctx, cache_dir)
    folder = cache.store.locate()
    with one_line(SolverCacheError):  # unreadable, or a file where the folder should be
        entries = list(cache.entries())
    for entry in entries:
        created = datetime.fromtimestamp(entry.created_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        click.echo(f"{entry.key[:16]}  {entry.model:<40} {created}  {entry.output_chars} chars")
    click.echo(f"{len(entries)} entries in {folder}")


@solver_cache.command("clear")
@_CACHE_DIR_OPTION
@yes_option()
@click.pass_context
def cache_clear(ctx: click.Context, cache_dir: Path | None, yes: bool) -> None:
    """Delete every cached generation (a run's: not while a run writes there)."""
    from ratchet_ray.cli.evidence import writer_lock

    cache = _cache(ctx, cache_dir)
    folder = cache.store.locate()
    if not yes:
        click.confirm(f"Delete every entry of {folder}?", abort=True)
    run_dir = None if cache_dir is not None else ctx.obj["run_dir"]
    with writer_lock(run_dir, "ratchet solver-cache clear") if run_dir else nullcontext(), \
            one_line(SolverCacheError):
        click.echo(f"removed {cache.clear()} entries from {folder}")


COMMANDS: list[click.Command] = [doctor, solver_cache]
