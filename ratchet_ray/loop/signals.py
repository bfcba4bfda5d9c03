"""How a driver's process meets SIGTERM and Ctrl-C: unwound as Ctrl-C, held while a run dir is
made, noted below Python where a handler's exception may be swallowed. No Ray import: the sweep
installs them before Ray may be imported (it keeps the auth mode it first sees).
``session`` (``ray_session``) uses them around ``ray.init`` and re-exports them.

Contracts:
- ``unwind_on_sigterm()``: from then on SIGTERM in the main thread raises
  ``KeyboardInterrupt("SIGTERM")``, noted for ``interrupting_signal``.
- ``note_ctrl_c()``: from then on Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` as Python's own
  handler does, and is noted too (``interrupting_signal`` says "" for it).
- ``hold_sigterm()``: SIGTERM held back until the returned ``release`` is called.
- ``raise_if_signalled()``: the ``KeyboardInterrupt`` a signal of this session raised, again,
  when it was swallowed; the driver asks between phases.
- ``watching_signals()``: for a long block of the main thread (the baseline's probes, a sweep's
  jobs and head start, ``swe validate``'s grades), SIGINT and SIGTERM are noted below Python as
  during ``ray.init``; it yields ``again()``, which runs the handler of one that came once more,
  so an exception Python swallowed (an at-fork hook, a ``__del__``) is raised where the block
  asks.
- ``interrupting_signal()``: the signal (``"SIGTERM"``) that unwound the current session as
  Ctrl-C, or "" (none, or Ctrl-C itself).
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

_signalled: list[str] = []  # the signals that interrupted this session, newest last


def _interrupt(signum: int, _frame: Any) -> None:
    _signalled.append("" if signum == signal.SIGINT else signal.Signals(signum).name)
    raise KeyboardInterrupt(_signalled[-1])


def interrupting_signal() -> str:
    """The signal that last unwound this session as Ctrl-C (``"SIGTERM"``), else ""."""
    return _signalled[-1] if _signalled else ""


def raise_if_signalled() -> None:
    """Raise ``KeyboardInterrupt`` again when a signal has interrupted this session and the code
    asking is still running: a handler runs at the next bytecode of the main thread, which may
    be in an at-fork hook or a ``__del__``, where Python prints "Exception ignored" and goes on
    (a SIGTERM was lost so, and the run finished as if none had come)."""
    if _signalled:
        raise KeyboardInterrupt(_signalled[-1])


@contextmanager
def _noting_signals() -> Iterator[Callable[[int], bool]]:
    """For the block, every signal Python handles is also noted below Python: its C handler
    writes the number to a wakeup pipe before any Python handler runs, so a signal is seen even
    when the handler's exception was swallowed (``raise_if_signalled``), or the handler was
    another library's (``ray.init`` sets its own). Yields ``came(signum)``; main thread only
    (elsewhere it notes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda _signum: False
        return
    read_end, write_end = os.pipe()
    for end in (read_end, write_end):
        os.set_blocking(end, False)
    before = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    noted = bytearray()

    def came(signum: int) -> bool:
        try:
            noted.extend(os.read(read_end, 4096))
        except BlockingIOError:
            pass
        return signum in noted

    try:
        yield came
    finally:
        signal.set_wakeup_fd(before)
        os.close(read_end)
        os.close(write_end)


STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def watching_signals() -> Iterator[Callable[[], None]]:
    """SIGTERM and SIGINT noted below Python for the block (``_noting_signals``); yields
    ``again()``: when one came in the block, its handler now (the current one, when callable:
    ``exit_on_signal``'s ``SystemExit``, ``unwind_on_sigterm``'s or Ctrl-C's
    ``KeyboardInterrupt``) raises where ``again`` is called, as it would have where it ran had
    Python not swallowed its exception. ``again`` does nothing when none came, or off the main
    thread. A block left by a signal's exception never asks again: the block is over."""
    with _noting_signals() as came:
        def again() -> None:
            for signum in STOPPING_SIGNALS:
                handler = signal.getsignal(signum)
                if came(signum) and callable(handler):
                    handler(signum, None)

        yield again


def unwind_on_sigterm() -> None:
    """From now on SIGTERM in the main thread raises ``KeyboardInterrupt("SIGTERM")``: ray.init's
    handler dumps a stack and exits (nothing recorded, no way to resume named, actors left to
    their lease), Python's ends the process at once."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def note_ctrl_c() -> None:
    """From now on Ctrl-C (SIGINT) in the main thread raises a bare ``KeyboardInterrupt``, as
    Python's handler does, and is noted, so ``raise_if_signalled`` raises it again where it was
    lost: DuckDB turns one that comes during a query into its own "Query interrupted" error,
    which a soft phase recorded as its failure while the run went on to its last round. Left
    alone when SIGINT's handler is not Python's (ignored in a background job, or another's)."""
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)


def hold_sigterm() -> Callable[[], None]:
    """Hold SIGTERM back in the main thread until the returned ``release`` is called (once is
    enough; later calls do nothing): a SIGTERM that comes meanwhile is only noted, and handed
    to the handler set before the hold when ``release`` runs. The driver holds it while the run
    dir is made, so a stop in that window is recorded (it was the default action: the process
    gone, nothing written, no resume named). A handler, not a signal mask: any thread may be
    the one the kernel hands a process's signal to."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    came: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, _frame: came.append(signum))
    released: list[bool] = []

    def release() -> None:
        if released:
            return
        released.append(True)
        signal.signal(signal.SIGTERM, before)
        if came and callable(before):
            before(signal.SIGTERM, None)
        elif came and before != signal.SIG_IGN:  # the default action, now it can be taken
            os.kill(os.getpid(), signal.SIGTERM)

    return release
