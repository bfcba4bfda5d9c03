"""``ratchet report RUN_DIR [RUN_DIR ...]`` (``ratchet_ray/report``) and ``ratchet compare RUN_A
RUN_B [RUN_C ...]`` (``ratchet_ray/evidence/run_pairs.py``; the report of RUN_A RUN_B shows the
same table): what each does is its command's help; runs that do not pair are refused in one line.
"""

from __future__ import annotations

import time
from contextlib import closing, suppress
from pathlib import Path

import click

from ratchet_ray.cli.options import NumberRange, cannot_write, one_line


@click.command("report")
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path),
              help="HTML file to write (default: report.html in the first run dir or sweep).")
@click.option("--max-capsules", type=click.IntRange(min=0), default=60_000, show_default=True,
              help="Capsules the browser holds at most; whole runs past it are left out.")
@click.option("--no-tasks", is_flag=True,
              help="Do not load the suite's task statements (the browser shows task ids).")
@click.option("--watch", is_flag=True,
              help="Serve the report live on 127.0.0.1 instead of writing it: rebuilt from the "
                   "evidence as rounds finish, the page reloads itself (Ctrl-C stops).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="With --watch: the loopback port (0: any free one).")
@click.option("--interval", type=NumberRange(min=0.5), default=5.0, show_default=True,
              help="With --watch: seconds between the page's checks for new evidence.")
def report(paths: tuple[Path, ...], out: Path | None, max_capsules: int, no_tasks: bool,
           watch: bool, port: int, interval: float) -> None:
    """Write one HTML page (opens offline) for run dirs, seeds of an arm, or a sweep folder:
    headline metrics, pass@1 curves with rollbacks, the bank's life, every skill's evidence, a
    capsule browser, costs, and the A1-A8 table of a sweep. Reads the evidence only: safe while
    a run is going. With --watch, a page on 127.0.0.1 that follows a running run."""
    if watch:
        _watch(paths, port, interval, max_capsules=max_capsules, with_tasks=not no_tasks)
        return
    from ratchet_ray.report.data import NotARunDir
    from ratchet_ray.report.html import build_report

    started = time.perf_counter()
    # OSError: the disk filled, or the folder became read-only meanwhile; ValueError: an
    # unreadable evidence part (``UnreadableEvidence``).
    with cannot_write("the report", "pass a writable file with -o", out), \
            one_line(NotARunDir, ValueError):
        _check_writable(paths, out)
        written = build_report(paths, out, max_capsules=max_capsules, with_tasks=not no_tasks,
                               warn=lambda line: click.echo(f"warning: {line}", err=True))
    size = written.stat().st_size
    click.echo(f"{written} ({human_size(size)}, {time.perf_counter() - started:.1f} s)")


def _check_writable(paths: tuple[Path, ...], out: Path | None) -> None:
    """``ClickException`` before any work when the report's folder cannot be written (a
    read-only run dir: ``-o`` writes elsewhere)."""
    from ratchet_ray.report.sweep import expand
    from ratchet_ray.storage.fsutil import unwritable, write_target

    if out is None:
        found = expand(paths)
        out = (found.sweeps[0] if found.sweeps else found.run_dirs[0]) / "report.html"
    try:
        target = write_target(out)  # a link is written through (kept), as plot's and export's
    except OSError as exc:  # a loop of links: nothing to write through
        raise click.ClickException(f"cannot write the report to {out}: {exc.strerror}; point "
                                   "the link at a file or remove it, or pass another file "
                                   "with -o") from exc
    why = unwritable(target.parent)
    if why is not None:
        raise click.ClickException(f"cannot write the report to {out}: {why}; pass a writable "
                                   "file with -o /a/writable/report.html")


def _watch(paths: tuple[Path, ...], port: int, interval: float, **options) -> None:
    from ratchet_ray.report.data import NotARunDir
    from ratchet_ray.report.live import LiveReport

    try:
        with one_line(NotARunDir):
            live = LiveReport(paths, port=port, interval_s=interval, **options)
    except OSError as exc:  # the port is taken
        raise click.ClickException(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}; "
                                   "pass another --port (0: any free one)") from exc
    click.echo(f"live report of {', '.join(str(p) for p in paths)} at {live.url} "
               "(rebuilt as rounds finish; Ctrl-C stops)")
    with closing(live), suppress(KeyboardInterrupt):  # Ctrl-C stops serving
        live.serve()


def human_size(size: int) -> str:
    """``812 B``, ``39.2 kB``, ``4.1 MB`` (decimal units, as file managers show them)."""
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1e3:.1f} kB"
    return f"{size / 1e6:.1f} MB"


@click.command("compare")
@click.argument("runs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
def compare(runs: tuple[Path, ...]) -> None:
    """Compare RUN_B (and any later run) with RUN_A on the eval tasks they share: paired Δ of
    pass@1 per round and of rolling gain, a 95% bootstrap interval over tasks and McNemar's
    exact p. The runs must share seed and eval tasks (the same --seed, --n-eval / --subset)."""
    if len(runs) < 2:
        raise click.UsageError("give two run dirs or more: RUN_A (the reference) and the runs "
                               "to compare with it")
    from ratchet_ray.evidence.run_pairs import NotPaired, describe, paired_runs
    from ratchet_ray.report.data import NotARunDir, check_run_dir

    with one_line(NotPaired, NotARunDir):
        reference = check_run_dir(runs[0])
        pairs = [paired_runs(reference, check_run_dir(other)) for other in runs[1:]]
    for i, pair in enumerate(pairs):
        if i:
            click.echo("")
        for line in describe(pair):
            click.echo(line)


COMMANDS = [report, compare]
