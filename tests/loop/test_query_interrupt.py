"""A Ctrl-C that lands while DuckDB runs a query is still Ctrl-C: DuckDB answers the signal
with its own exception, not ``KeyboardInterrupt``, and ``run_loop`` must record the stop and print
the resume command for it as for any other (``evidence.store.query_interrupted``)."""

from __future__ import annotations

import threading
import time

import duckdb
import pytest

from ratchet_ray.evidence.store import query_interrupted


def test_a_real_interrupted_query_is_recognised_and_other_errors_are_not():
    con = duckdb.connect()
    timer = threading.Timer(0.5, con.interrupt)
    timer.start()
    started = time.monotonic()
    with pytest.raises(BaseException) as caught:  # whichever class this DuckDB raises
        con.execute("SELECT count(*) FROM range(10000000000) a, range(1000) b").fetchall()
    timer.cancel()
    assert time.monotonic() - started < 60
    assert query_interrupted(caught.value), repr(caught.value)
    assert query_interrupted(RuntimeError("Query interrupted"))
    assert not query_interrupted(RuntimeError("Binder Error: column x not found"))
    assert not query_interrupted(ValueError("Query interrupted"))
