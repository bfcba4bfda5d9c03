"""Keep/revert experiments against a frozen evaluator (``ratchet experiment``).

Plain library (no Ray): ``contract`` (the evaluator's JSON line), ``paths`` (editable and
protected globs), ``gitops`` (git in the target repo), ``ledger`` (append-only results.tsv),
``state`` (artifacts and the in-flight marker for resume), ``evaluator`` (frozen files, bounded
runs), ``proposals`` (changes, scripted proposer), ``llm_proposer`` (one change from an LLM
backend), ``engine`` + ``iteration`` (the loop), ``skill_eval`` (the contract line of the
built-in skill-loop evaluator).
"""
