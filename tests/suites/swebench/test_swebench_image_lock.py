"""The per-image ``ImageLock`` is the one lock between the threads of a worker too: a release
that finds the image busy keeps it at once, whoever holds the lock (no daemon needed)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from ratchet_ray.suites.swebench.docker.images import InstanceImages
from ratchet_ray.suites.swebench.settings import SwebenchSettings

NAME = "sweb.eval.x86_64.ratchet__calc-1:latest"


class _Images:
    """The daemon's ``images`` API as far as these calls use it: none listed, removals noted."""

    def __init__(self):
        self.removed: list[str] = []

    def list(self) -> list:
        return []

    def remove(self, name: str, **_options) -> None:
        self.removed.append(name)


def test_a_release_while_a_thread_of_the_same_worker_ensures_the_image_keeps_it_at_once(
        tmp_path, monkeypatch):
    client = SimpleNamespace(images=_Images())
    settings = SwebenchSettings(namespace=None, cache_level="none",
                                lock_dir=str(tmp_path / "locks"))
    images = InstanceImages(client, settings)
    inside, leave = threading.Event(), threading.Event()

    def ready(_name, _instance) -> bool:  # the ensure holds the image's exclusive lock here
        inside.set()
        leave.wait(30)
        return True

    monkeypatch.setattr(images, "name", lambda _instance: NAME)
    monkeypatch.setattr(images, "ready", ready)
    monkeypatch.setattr(images.cache, "record", lambda *_args, **_kw: None)
    builder = threading.Thread(target=images.ensure,
                               args=({"instance_id": "ratchet__calc-1"}, lambda _line: None))
    builder.start()
    said: list[str] = []
    released: list[bool] = []
    remover = threading.Thread(target=lambda: released.append(images.release(NAME, said.append)))
    try:
        assert inside.wait(30)
        remover.start()
        remover.join(10)
        assert released == [False], "a release waited for the other thread's ensure"
        assert said == [f"kept image {NAME}: another grader or agent on this machine uses it"]
        assert client.images.removed == []
    finally:
        leave.set()
        builder.join(30)
        if remover.ident is not None:  # started
            remover.join(30)
