"""What a run keeps on disk, safely: crash-safe writes (``fsutil``), one writer per run dir
(``runlock``) and the run's artifact store, a folder or a storage URI (``artifacts``)."""
