"""Test helper, run as root inside ``unshare --mount``: become a plain non-root user, then exec.

``python -I -S nonroot_launch.py UID RUNTIME_PATH... -- COMMAND...``. On this CI image Python
lives under /root (mode 0700), where no other user can reach it; like ``confine.py`` does for
the sandbox, this covers such directories with an empty tmpfs re-exposing only the runtime,
read-only (in this private mount namespace only), then drops groups, gid and uid (all
capabilities go with the uid) and execs COMMAND with the environment it was given. The process
that results is an ordinary unprivileged user, as a Ray worker on a cluster node would be."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "confine", Path(__file__).resolve().parents[3] / "ratchet_ray/suites/mbpp/confine.py")
confine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(confine)


def main(argv: list[str]) -> None:
    split = argv.index("--")
    uid, runtime, command = int(argv[1]), argv[2:split], argv[split + 1:]
    libc = confine._libc()
    roots = confine.minimal_roots(runtime)
    confine._mount(libc, None, "/", None, confine.MS_REC | confine.MS_PRIVATE)
    for directory in confine.minimal_roots([a for a in map(confine.closed_ancestor, roots) if a]):
        confine._cover(libc, directory, [r for r in roots if confine._is_under(r, directory)])
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv)
