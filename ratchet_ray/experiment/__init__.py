"""Keep/revert experiments against a frozen evaluator (``ratchet experiment``): plain library
(no Ray), one module per concern; the loop is ``engine`` + ``iteration``, the rules a user sees
are docs/experiment-loop.md.
"""
