"""``python -m ratchet_ray.cli`` is the ``ratchet`` command."""

from ratchet_ray.cli import main

if __name__ == "__main__":
    main()
