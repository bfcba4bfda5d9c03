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
    # DuckDB drops an interrupt that comes before the query runs (the query then runs for
    # ever): one timer shot at 0.5 s was lost whenever a loaded machine had not begun the query
    # by then. So interrupt again until the query has stopped.
    stopped = threading.Event()

    def interrupt_until_stopped() -> None:
        while not stopped.wait(0.2):
            con.interrupt()

    interrupter = threading.Thread(target=interrupt_until_stopped, daemon=True)
    interrupter.start()
    started = time.monotonic()
    try:
        with pytest.raises(BaseException) as caught:  # whichever class this DuckDB raises
            con.execute("SELECT count(*) FROM range(10000000000) a, range(1000) b").fetchall()
    finally:
        stopped.set()
        interrupter.join()
    assert time.monotonic() - started < 60
    assert query_interrupted(caught.value), repr(caught.value)
    assert query_interrupted(RuntimeError("Query interrupted"))
    assert not query_interrupted(RuntimeError("Binder Error: column x not found"))
    assert not query_interrupted(ValueError("Query interrupted"))
