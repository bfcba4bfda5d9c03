"""A resolution proven by sessions the patch cannot tell apart: the gold record (``gold``), the
mutants of graded tests (``mutants``), the comparison with gold
(``differential``), the canary sessions the grader runs (``prover``) and the impossible twins of
the cheat probe (``twin``, ``twin_record``)."""
