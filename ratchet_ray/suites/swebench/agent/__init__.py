"""The patch Solvers of the SWE-bench suite: the in-house shell agent (``solver``, ``prompts``)
and mini-swe-agent (``mini_swe``)."""
