"""An exec's output from the Docker daemon, every frame of it.

``exec_frames(api, exec_id)`` starts the created exec (no TTY) and yields its output as
``(stream, data)`` frames (1: stdout, 2: stderr) in the daemon's order until it closes the
stream; nothing the daemon sent is dropped.

Why not ``APIClient.exec_start(stream=True)``: exec start is an HTTP upgrade whose ``101``
headers ``http.client`` parses through a buffered reader; frames that arrive with the headers (a
fast command, a loaded client) sit in that buffer while docker-py reads the raw socket beneath,
so a command's output comes back empty with exit code 0 (docker/docker-py#3332, #2042; it
happened to an agent's observation). Here the frames are read through that buffered reader.
"""

from __future__ import annotations

import struct
from typing import Any, Iterator

FRAME_HEADER = struct.Struct(">BxxxL")  # stream id, 3 bytes padding, payload length
STDOUT = 1  # stderr's frames are 2


def exec_frames(api: Any, exec_id: str) -> Iterator[tuple[int, bytes]]:
    """Start ``exec_id`` and yield its ``(stream, data)`` frames (see the module contract)."""
    response = api._post_json(api._url("/exec/{0}/start", exec_id),
                              headers={"Connection": "Upgrade", "Upgrade": "tcp"},
                              data={"Tty": False, "Detach": False}, stream=True)
    try:
        # Raises the daemon's error (e.g. the container is gone) as docker.errors.APIError.
        raw_socket = api._get_raw_response_socket(response)
        api._disable_socket_timeout(raw_socket)  # a quiet command is not a dead daemon
        reader = response.raw._fp.fp  # http.client's buffered reader over ``raw_socket``
        while True:
            header = reader.read(FRAME_HEADER.size)
            if len(header) < FRAME_HEADER.size:
                return
            stream, size = FRAME_HEADER.unpack(header)
            if not size:
                continue
            data = reader.read(size)
            if not data:
                return
            yield stream, data
            if len(data) < size:
                return  # the daemon closed mid-frame: what came is kept, nothing more will
    finally:
        response.close()
