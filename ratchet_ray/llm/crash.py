"""Reading a native crash: which signal killed a process, and in which llama.cpp function.

Contracts:
- ``Diagnosed``: an exception carrying its own ``detail`` and fix (``hint``), which
  ``doctor.timed`` prints instead of the check's generic hint (a reinstall fixes no crash).
- ``install_native_backtrace()``: on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, glibc's
  ``backtrace_symbols_fd`` writes the native frames to stderr under ``native backtrace
  (SIGSEGV):``, then the process still dies of the signal. With ``faulthandler`` (installed
  after it, so both run) a plain child process writes what Ray's workers write to their ``.err``
  log. Best effort.
- ``crash_signal(text)``: the signal a crash report names (Ray's/absl's ``*** SIGSEGV
  received``, ours, Python's ``Fatal Python error: Segmentation fault``), or None.
- ``crashing_function(text)``: the innermost llama.cpp function (``ggml_*``, ``llama_*``,
  ``gguf_*``, ``ggml::...``) among the native frames, in glibc's, absl's or gdb's format;
  Itanium-mangled names are demangled to ``a::b::name``. None when no such frame is named.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal

FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)
# What Python's faulthandler writes for each fatal signal.
_FAULTHANDLER_NAMES = {"Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS",
                       "Illegal instruction": "SIGILL", "Floating-point exception": "SIGFPE",
                       "Floating point exception": "SIGFPE", "Aborted": "SIGABRT"}
_SIGNAL_LINE = re.compile(r"\*\*\* (SIG[A-Z]+) received|native backtrace \((SIG[A-Z]+)\)"
                          r"|Fatal Python error: ([A-Za-z -]+)")
_FRAME = re.compile(
    r"\((?P<glibc>[A-Za-z_][\w.$]*)\+0x[0-9a-fA-F]+\)"  # glibc backtrace_symbols
    r"|@\s+0x[0-9a-fA-F]+\s+(?:\(unknown\)|\d+)\s+(?P<absl>[A-Za-z_][\w:~<>]*)\("  # absl
    r"|#\d+\s+0x[0-9a-fA-F]+\s+in\s+(?P<gdb>[A-Za-z_][\w:~<>]*)\s*\(")  # gdb
_LLAMA_CPP = re.compile(r"(?:ggml|llama|gguf)(?:_|::)\w")

_handler_refs: list = []  # the ctypes callback must outlive the process' last signal


class Diagnosed(Exception):
    detail: str  # what happened, where its log is (module contracts)
    hint: str


def signal_name(returncode: int | None) -> str | None:
    """``SIGSEGV`` for a return code of -11; None when the process was not killed by a signal."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def crash_signal(text: str) -> str | None:
    """The first signal ``text`` reports a death by (module contracts), or None."""
    for match in _SIGNAL_LINE.finditer(text):
        absl, ours, python = match.groups()
        name = absl or ours or _FAULTHANDLER_NAMES.get((python or "").strip())
        if name:
            return name
    return None


def demangle(symbol: str) -> str:
    """``ggml_backend_amx_mul_mat`` for ``_Z24ggml_backend_amx_mul_matP19...``, ``a::b::f`` for
    ``_ZN1a1b1fE...``: the qualified name of an Itanium-mangled function (no parameters), else
    ``symbol`` unchanged."""
    if not symbol.startswith("_Z"):
        return symbol
    rest, nested = symbol[2:], symbol.startswith("_ZN")
    if nested:
        rest = rest[1:].lstrip("rVK")
    parts = []
    while rest[:1].isdigit():
        digits = re.match(r"\d+", rest).group()
        size = int(digits)
        parts.append(rest[len(digits):len(digits) + size])
        rest = rest[len(digits) + size:]
        if not nested:
            break
    return "::".join(parts) if parts else symbol


def last_line(text: str, empty: str, limit: int = 300) -> str:
    """The last non-blank line of ``text`` (at most ``limit`` characters), or ``empty``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:limit] if lines else empty


def crashing_function(text: str) -> str | None:
    """The innermost llama.cpp function named by a native frame of ``text``, or None."""
    for match in _FRAME.finditer(text):
        name = demangle(next(group for group in match.groups() if group))
        if _LLAMA_CPP.match(name):
            return name
    return None


def install_native_backtrace() -> None:
    """Write the native frames to stderr on a fatal signal, then die of it (module contracts).
    Call it before ``faulthandler.enable()``: faulthandler chains to the handler it found."""
    libc = ctypes.CDLL(None, use_errno=True)
    frames = (ctypes.c_void_p * 128)()
    libc.backtrace.argtypes = [ctypes.c_void_p, ctypes.c_int]
    libc.backtrace_symbols_fd.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.signal.restype = ctypes.c_void_p
    libc.backtrace(frames, 1)  # the first call loads libgcc_s: do it now, not in a dying process
    stderr = 2

    def on_fatal(signum: int) -> None:
        libc.signal(signum, None)  # SIG_DFL first: a fault in here ends the process the same way
        os.write(stderr, f"native backtrace ({signal.Signals(signum).name}):\n".encode())
        libc.backtrace_symbols_fd(frames, libc.backtrace(frames, len(frames)), stderr)
        getattr(libc, "raise")(signum)  # delivered when this returns: the default action

    handler = ctypes.CFUNCTYPE(None, ctypes.c_int)(on_fatal)
    _handler_refs.append(handler)
    for signum in FATAL_SIGNALS:
        libc.signal(int(signum), ctypes.cast(handler, ctypes.c_void_p))
