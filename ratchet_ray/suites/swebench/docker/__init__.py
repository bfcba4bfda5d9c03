"""Docker infrastructure of the SWE-bench suite: instance images (``images``) and the node's
image cache (``image_cache``) stripped of the repository's future history (``history``), locked-down containers (``container``) and the commands run in
them (``execbox``, ``exec_stream``), infrastructure-failure classification (``infra``) and the
placement of work on the node that holds an instance's image (``placement``)."""
