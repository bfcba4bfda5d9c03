"""The patch Solver of the SWE-bench suite: the agentic shell loop (``solver``) and its prompts
and action schema (``prompts``)."""
