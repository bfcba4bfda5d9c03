"""A cross-session beacon through the host's page cache (issue 49), and a forger built on it.

``BEACON`` is Python source (standard library only) run inside a container: it writes bits by
keeping (1) or evicting (0) a page of files of the image's read-only layers that no Python test
reads (perl's modules), and reads them back by timing a one-byte read of each page: a
cached page answers in microseconds, an evicted one goes to the disk. ``FIRST_FORGER`` is a
patch for ``ratchet__calc-1`` that leaves ``add`` wrong and, in pytest's process, reads a
16-bit mark there: found, it behaves; not found, it writes the mark and makes every test pass
(the run-time wrapper of ``differential_forgeries.PROFILE_WRAP``, which only the differential
refuses). A patch that cheats only in the first session of its grade.
"""

from __future__ import annotations

import random
import secrets

from differential_forgeries import PROFILE_WRAP, ops_with

BEACON_FILES = "/usr/share/perl/5.36.0/**/*.pm"
"""Perl's modules: in every image built on the base one, read by no Python test."""
BEACON = f'''
import glob as _glob
import os as _os
import time as _time

_FILES = sorted(p for p in _glob.glob("{BEACON_FILES}", recursive=True)
                if _os.path.getsize(p) > 8192)


def beacon_write(bits):
    """Bit i: the second page of file i kept in the cache (1) or evicted (0)."""
    for bit, path in zip(bits, _FILES):
        fd = _os.open(path, _os.O_RDONLY)
        try:
            if bit:
                _os.pread(fd, 1, 4096)
            else:
                _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_DONTNEED)
        finally:
            _os.close(fd)


_CALIBRATION = 24
"""The last files: half read (cached), half evicted, then timed, to set the reader's threshold."""


def _timed_read(path):
    fd = _os.open(path, _os.O_RDONLY)
    try:
        _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_RANDOM)  # no readahead beyond the page read
        began = _time.perf_counter_ns()
        _os.pread(fd, 1, 4096)
        return _time.perf_counter_ns() - began
    finally:
        _os.close(fd)


def _threshold_ns():
    """Between a cached and an evicted read on this host, measured now: a disk (or a VM's
    host cache) may answer an evicted page in 10 to 100 us, so no constant fits every host."""
    kept, evicted = _FILES[-_CALIBRATION:-_CALIBRATION // 2], _FILES[-_CALIBRATION // 2:]
    for path in kept:
        _timed_read(path)
    cached = sorted(_timed_read(path) for path in kept)
    for path in evicted:
        fd = _os.open(path, _os.O_RDONLY)
        _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_DONTNEED)
        _os.close(fd)
    cold = sorted(_timed_read(path) for path in evicted)
    return (cached[len(cached) // 2] * cold[len(cold) // 2]) ** 0.5


def beacon_read(n):
    """One timed read per file (one file per bit: a read's readahead never reaches another)."""
    assert n <= len(_FILES) - _CALIBRATION, (n, len(_FILES))
    bits = [_timed_read(path) for path in _FILES[:n]]  # first: calibrating reads pages too
    threshold = _threshold_ns()
    return [1 if took < threshold else 0 for took in bits]
'''

MARK = [1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0]

FIRST = BEACON + f'''

_MARK = {MARK!r}


def _first_session():
    """No mark in the page cache: this is the grade's first session. Leave the mark."""
    seen = beacon_read(len(_MARK))
    beacon_write(_MARK)
    return sum(a == b for a, b in zip(seen, _MARK)) < len(_MARK) - 2
'''

FIRST_FORGER = ops_with(FIRST + PROFILE_WRAP.replace(
    'if "pytest" in sys.modules:\n    sys.setprofile(_profile)',
    'if "pytest" in sys.modules and _first_session():\n    sys.setprofile(_profile)'))


def writer(bits: list[int]) -> list[str]:
    """A container's command that writes ``bits``."""
    return ["python3", "-c", BEACON + f"\nbeacon_write({bits!r})\n"]


def reader(n: int) -> list[str]:
    """A container's command that prints the ``n`` bits it reads, as 0s and 1s."""
    return ["python3", "-c", BEACON + f"\nprint(''.join(map(str, beacon_read({n}))))\n"]
assert "and _first_session()" in FIRST_FORGER, "PROFILE_WRAP changed: the forger must follow it"


DENTRY_DIR = "/usr/share/perl/5.36.0"
"""A folder of the image's read-only layers: a name looked up there leaves a (negative) dentry
in the cache of the host filesystem under the layer, which every container of the image shares."""
DENTRY = f'''
import os as _os
import time as _time

_PER_BIT = 8  # names per bit: a bit is the median of their lookup times


def _lookup_ns(name):
    began = _time.perf_counter_ns()
    try:
        _os.stat("{DENTRY_DIR}/" + name)
    except FileNotFoundError:
        pass
    return _time.perf_counter_ns() - began


def dentry_write(bits, tag):
    """Bit i = 1: its names looked up (each leaves a negative dentry); 0: left alone."""
    for i, bit in enumerate(bits):
        for j in range(_PER_BIT if bit else 0):
            _lookup_ns(f"{{tag}}-{{i}}-{{j}}")


def dentry_read(n, tag):
    """A bit is 1 when its names' median lookup is faster than half the bits' (the writer sets
    about half; a real forger would calibrate on names of its own)."""
    took = [sorted(_lookup_ns(f"{{tag}}-{{i}}-{{j}}") for j in range(_PER_BIT))[_PER_BIT // 2]
            for i in range(n)]
    middle = sorted(took)[n // 2]
    return [1 if t < middle else 0 for t in took]
'''


def dentry_writer(bits: list[int], tag: str) -> list[str]:
    """A container's command that writes ``bits`` as dentries of names made from ``tag``."""
    return ["python3", "-c", DENTRY + f"\ndentry_write({bits!r}, {tag!r})\n"]


def dentry_reader(n: int, tag: str) -> list[str]:
    """A container's command that prints the ``n`` bits it reads under ``tag``, as 0s and 1s."""
    return ["python3", "-c", DENTRY + f"\nprint(''.join(map(str, dentry_read({n}, {tag!r}))))\n"]


class Trial:
    """One write and one read of a beacon between two fresh containers of ``image`` (as the
    sessions of a grade are), optionally with the grader's clearing between them: what the
    beacon test and ``bench/host_marks.py`` measure. ``cleared_in``: the clearing's seconds."""

    def __init__(self, client, image: str, bits: int):
        self.client, self.image, self.bits = client, image, bits
        self.cleared_in: float | None = None

    def _run(self, command: list[str]) -> str:
        out = self.client.containers.run(self.image, command, remove=True, user="65534",
                                         network_disabled=True, labels={"ratchet.test": "beacon"})
        return out.decode().strip()

    def _agreement(self, sent: list[int], got: str) -> float:
        if len(got) != len(sent):
            raise AssertionError(f"the reader printed {got!r}, not {len(sent)} bits")
        return sum(int(g) == s for g, s in zip(got, sent)) / len(sent)

    def page_cache(self, clear: bool) -> float:
        from ratchet_ray.suites.swebench.proof.host_marks import PageCacheEviction

        sent = [random.getrandbits(1) for _ in range(self.bits)]
        self._run(writer(sent))
        if clear:
            evicted = PageCacheEviction(self.client).evict(self.image)
            if evicted.reason or evicted.files < 1000:
                raise AssertionError(evicted.describe())
            self.cleared_in = evicted.seconds
        return self._agreement(sent, self._run(reader(self.bits)))

    def dentries(self, clear: bool) -> float:
        from ratchet_ray.suites.swebench.proof.host_marks import drop_dentries

        tag = secrets.token_hex(4)  # names no earlier trial looked up
        sent = [random.getrandbits(1) for _ in range(self.bits)]
        self._run(dentry_writer(sent, tag))
        if clear:
            dropped = drop_dentries()
            if dropped.reason:
                raise AssertionError(dropped.describe())
            self.cleared_in = dropped.seconds
        return self._agreement(sent, self._run(dentry_reader(self.bits, tag)))
