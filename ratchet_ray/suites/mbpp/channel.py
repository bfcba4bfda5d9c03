"""The running sandbox, seen from the grader: its frames, its stderr tail, and its end.

``SandboxProcess(proc, frames_fd, job, max_frame, mode, info_fd, scratch)`` writes the job to the
runner's stdin, then ``next_frame(deadline)`` returns each length-prefixed frame in order (None
once the sandbox side closed; ``FrameTimeout`` past the deadline; ``FrameTooLarge`` above
``max_frame`` bytes, before reading it) while draining a capped stderr tail. ``close()`` SIGKILLs
the sandbox's session and returns only once ``reap_sandbox`` saw its pid namespace gone.

Memory: a frame is read straight into one ``bytearray`` of its announced size (``os.readv``),
handed to the caller: never a growing buffer plus slices and copies.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import selectors
import shutil
import signal
import subprocess
import time

log = logging.getLogger(__name__)


class FrameTimeout(Exception):
    """No frame arrived before the deadline."""


class FrameTooLarge(Exception):
    """The runner announced a frame above ``max_frame_mb``."""


def reap_sandbox(info_fd: int, timeout_s: float = 5.0) -> None:
    """Return once the sandbox's pid namespace is gone (closes ``info_fd``): its init, whose pid
    bwrap wrote to the info fd, exits only after the kernel killed every other process in it."""
    try:
        ready = select.select([info_fd], [], [], 0)[0]
        info = os.read(info_fd, 4096) if ready else b""
    finally:
        os.close(info_fd)
    try:
        init_pid = int(json.loads(info.decode())["child-pid"])
    except (ValueError, KeyError, TypeError):
        return  # bwrap never got as far as starting the sandbox (or the weak mode)
    deadline, zombie_since = time.monotonic() + timeout_s, 0.0
    while time.monotonic() < deadline:
        try:  # ours to reap when we are the subreaper (see sandbox._become_subreaper)
            if os.waitpid(init_pid, os.WNOHANG)[0] == init_pid:
                return
            time.sleep(0.005)
            continue
        except ChildProcessError:
            pass
        try:
            with open(f"/proc/{init_pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return
        if fields[0] in ("Z", "X"):  # every process of the sandbox is gone
            zombie_since = zombie_since or time.monotonic()
            # not ours (yet): being re-parented to us, or to another reaper after a while
            if int(fields[1]) != os.getpid() and time.monotonic() - zombie_since > 0.5:
                return
        time.sleep(0.005)
    log.error("sandbox init %d still alive %.0fs after SIGKILL", init_pid, timeout_s)


class SandboxProcess:
    """The running sandbox: frames in order, a capped stderr tail, and ``close`` (SIGKILL)."""

    def __init__(self, proc: subprocess.Popen, frames_fd: int, job: bytes, max_frame: int,
                 mode: str, info_fd: int, scratch: str | None = None):
        self.proc, self.frames_fd, self.max_frame, self.mode = proc, frames_fd, max_frame, mode
        self.info_fd, self.scratch = info_fd, scratch
        self.stderr = bytearray()
        self._buffer = bytearray()  # bytes read before a frame's size was known
        self._payload: bytearray | None = None  # the frame being read, at its announced size
        self._filled = 0
        self._eof = False
        self._selector = selectors.DefaultSelector()
        self._selector.register(frames_fd, selectors.EVENT_READ, "frames")
        self._selector.register(proc.stderr, selectors.EVENT_READ, "stderr")
        os.set_blocking(frames_fd, False)
        try:  # the runner reads all of stdin before anything else
            proc.stdin.write(job)
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # died at start-up: next_frame sees EOF and the stderr says why

    def next_frame(self, deadline: float) -> bytearray | None:
        """The next frame's bytes (the caller's to keep); None once the runner side closed.
        Past the deadline, what had arrived is still read once before ``FrameTimeout``: a slow
        grader must not miss a frame sent in time (above all the start frame, which decides
        whether a failure is the code's)."""
        last_look = False
        while True:
            frame = self._take()
            if frame is not None:
                return frame
            if self._eof:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if last_look:
                    raise FrameTimeout()
                last_look, remaining = True, 0
            for key, _ in self._selector.select(timeout=remaining):
                if key.data == "frames":
                    self._eof = not self._fill()
                else:
                    chunk = self._read(key.fd)
                    if chunk:
                        self.stderr.extend(chunk)
                        del self.stderr[:-8000]
                    elif chunk is not None:
                        self._selector.unregister(key.fileobj)

    def _take(self) -> bytearray | None:
        """The frame once all of it arrived; starts the next one when its size is known."""
        if self._payload is None:
            if len(self._buffer) < 4:
                return None
            size = int.from_bytes(self._buffer[:4], "big")
            if size > self.max_frame:
                raise FrameTooLarge(f"{size} bytes")
            self._payload = bytearray(size)
            early = self._buffer[4:4 + size]  # what one read brought past the header
            self._payload[:len(early)] = early
            self._filled = len(early)
            del self._buffer[:4 + len(early)]
        if self._filled < len(self._payload):
            return None
        frame, self._payload, self._filled = self._payload, None, 0
        return frame

    def _fill(self) -> bool:
        """Read what the channel holds: into the frame's own buffer while one is being read,
        else a small chunk for the next header. False at end of file."""
        try:
            if self._payload is not None:
                view = memoryview(self._payload)[self._filled:]
                try:
                    count = os.readv(self.frames_fd, [view])
                finally:
                    view.release()
                self._filled += count
                return count > 0
            chunk = os.read(self.frames_fd, 1 << 16)
        except BlockingIOError:
            return True
        self._buffer.extend(chunk)
        return bool(chunk)

    @staticmethod
    def _read(fd: int) -> bytes | None:
        try:
            return os.read(fd, 1 << 20)
        except BlockingIOError:
            return None

    def close(self) -> int | None:
        """SIGKILL the sandbox (its whole session; bwrap's pid namespace dies with it); reap."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            log.error("sandbox process %d did not exit after SIGKILL", self.proc.pid)
        reap_sandbox(self.info_fd)
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
        self._selector.close()
        os.close(self.frames_fd)
        if self.proc.stderr:
            self.proc.stderr.close()
        return self.proc.returncode

    def stderr_tail(self) -> str:
        return bytes(self.stderr[-2000:]).decode(errors="replace")
