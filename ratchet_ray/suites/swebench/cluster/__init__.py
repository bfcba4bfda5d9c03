"""The SWE-bench suite's code that runs over the Ray cluster: the per-round report of every
Docker node (``reports``, the loop's ``round_report`` hook) and ``ratchet swe validate``'s run
on a Grader pool (``validation_run``). In the loop's layer (``tools.import_graph``); the
plain library never imports it."""
