"""The solver cache's bad doors: an entry or folder this user may not read, garbage or a
wrong shape where an entry should be, a file where the folder should be, a store that refuses
a put (a full disk). Each is one ``Error:`` line naming the path and the fix, or a miss the
run heals, and no other entry is lost; a paid reply the store refused is still returned.

Root reads whatever the mode bits say, so as root the command runs without the capabilities
that let it (``setpriv``); as another user ``chmod`` alone does it."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes import ScriptedLLM
from library_fixtures import deny  # noqa: F401 (a fixture)
from one_line import process_error_line, ratchet_denied

from ratchet_ray.llm.base import Message
from ratchet_ray.llm.cache import DAMAGED, CachedLLM, SolverCache, cache_key
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.settings.schema import LoopConfig

PROMPT = [Message("system", "Solve."), Message("user", "Write add(a, b).")]


def _run_dir(tmp_path: Path) -> Path:
    """A run dir as far as `ratchet --db RUN solver-cache` reads one: its config.yaml."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    dump_config(LoopConfig(), run_dir / "config.yaml")
    return run_dir


def _cache_with_two(folder: Path) -> tuple[SolverCache, str, str]:
    cache = SolverCache(folder)
    good, other = "ab" * 32, "cd" * 32
    cache.put(good, {"reply": {"model": "m", "text": "kept"}, "created_at": 2.0})
    cache.put(other, {"reply": {"model": "m", "text": "also kept"}, "created_at": 3.0})
    return cache, good, other


@pytest.mark.parametrize("what", ["folder", "entry"])
def test_a_cache_this_user_may_not_read_is_one_line_naming_it_and_the_fix(tmp_path, deny,
                                                                          what):
    """Both were pyarrow's traceback (the folder's naming no file). The run's cache: click's
    own check of --cache-dir refuses an unreadable folder before the cache is asked."""
    run_dir = _run_dir(tmp_path)
    folder = run_dir / "solver_cache"
    cache, good, _ = _cache_with_two(folder)
    denied = folder if what == "folder" else folder / cache._key(good)
    deny(denied)
    for command in ("list", "clear"):
        done = ratchet_denied("--db", str(run_dir), "solver-cache", command,
                               *(["--yes"] if command == "clear" else []))
        process_error_line(done, f"{denied} may not be read by this user",
                           f"chmod -R u+rX {folder}")
    for path in (folder, folder / cache._key(good)):
        path.chmod(0o755)
    assert len(list(cache.entries())) == 2  # nothing was removed


@pytest.mark.parametrize("damage", [b"\x00\xff garbage", b'{"reply": "text"}', b"{}",
                                    b'{"reply": {"model": "m"}}', b"[1, 2]"],
                         ids=["bytes", "reply-not-a-mapping", "empty", "no-text", "a-list"])
def test_a_damaged_entry_is_listed_as_such_and_a_run_asks_again(tmp_path, damage):
    """One shaped as JSON but not an entry was a KeyError or AttributeError in the Solver (the
    attempt an infrastructure failure) and in `solver-cache list`; the others stay listed."""
    folder = tmp_path / "solver_cache"
    llm = ScriptedLLM(lambda messages, schema: "def add(a, b):\n    return a + b")
    cached = CachedLLM(llm, folder)
    cached.complete(PROMPT, max_tokens=64)
    key = cache_key(llm.backend, llm.model, PROMPT,
                    {"max_tokens": 64, "temperature": 0.0, "stop": None, "json_schema": None})
    cache, _, _ = _cache_with_two(folder)
    (folder / cache._key(key)).write_bytes(damage)
    listed = CliRunner().invoke(_solver_cache(), ["list", "--cache-dir", str(folder)])
    assert listed.exit_code == 0, listed.output
    assert f"{key[:16]}  {DAMAGED}" in listed.output and "3 entries" in listed.output
    assert listed.output.count("  m  ") == 2, listed.output  # the good ones, as they were
    again = cached.complete(PROMPT, max_tokens=64)
    assert not again.cached and len(llm.calls) == 2
    assert cached.complete(PROMPT, max_tokens=64).cached  # rewritten whole
    assert len(llm.calls) == 2


def test_a_file_where_the_cache_folder_should_be_is_named_not_an_empty_cache(tmp_path):
    """`solver-cache list` of the run said "0 entries", `clear` "removed 0 entries"."""
    run_dir = _run_dir(tmp_path)
    folder = run_dir / "solver_cache"
    folder.write_text("not a folder")
    for args in (["list"], ["clear", "--yes"]):
        done = CliRunner().invoke(_solver_cache(), args, obj={"run_dir": run_dir})
        assert done.exit_code == 1 and "Traceback" not in done.output, done.output
        assert (f"{folder} is a file, not the solver cache folder; fix: move it aside "
                f"(`mv {folder} {folder}.bak`)") in done.output, done.output
    assert folder.read_text() == "not a folder"


@pytest.mark.parametrize("refusal", ["disk full", "file for folder"])
def test_a_reply_the_store_refuses_is_still_returned_and_named(tmp_path, monkeypatch, caplog,
                                                               refusal):
    """The put's OSError escaped `complete`: the Solver recorded the attempt as an
    infrastructure failure and the paid reply's tokens were booked nowhere."""
    folder = tmp_path / "solver_cache"
    llm = ScriptedLLM(lambda messages, schema: "answer")
    cached = CachedLLM(llm, folder)
    if refusal == "disk full":
        def full(key, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / key))
        monkeypatch.setattr(cached.cache.store, "put", full)
        said = f"no room to write in {folder}/"  # the entry's own folder, then the reason
    else:
        folder.write_text("not a folder")
        said = "cannot write a solver cache entry: Not a directory"
    with caplog.at_level(logging.WARNING, logger="ratchet_ray.llm.cache"):
        reply = cached.complete(PROMPT, max_tokens=8)
    assert reply.text == "answer" and reply.input_tokens > 0 and not reply.cached
    assert said in caplog.text and "the reply is used but not cached" in caplog.text, caplog.text


def _solver_cache():
    from ratchet_ray.cli.llm import solver_cache

    return solver_cache
