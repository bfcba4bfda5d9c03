"""How a mutant's value is drawn (``proof.replacement_literal``, from what
``proof.real_expectations`` measures; issue 49's second pass): a frequent real value is as
frequent among mutants, a number keeps its sign and its digits' law, and the shares follow how
the file writes its own expectations. No Docker; the detector's AUC over real test
files is ``bench/mutant_detector.py``'s."""

from __future__ import annotations

import ast
import random
from collections import Counter

from ratchet_ray.suites.swebench.proof import mutants
from ratchet_ray.suites.swebench.proof.real_expectations import (
    ARGUMENT, FRESH, FRESH_ROUND, ROUND, ROUND_MORE, SHARES, WHOLE, argument_share, distribution,
    literal_pool, observation, round_share, shares)
from ratchet_ray.suites.swebench.proof.replacement_literal import derange, replacement


def test_derange_never_returns_its_own_value_and_keeps_the_distribution():
    """Real values drawn from ``masses`` give mutants distributed as ``masses``; drawing "any
    other value" by mass instead makes the most frequent value rarer among mutants (the tell)."""
    masses = {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}
    rng = random.Random(0)
    pairs = [(own, derange(masses, own, rng))
             for own in rng.choices(list(masses), list(masses.values()), k=6000)]
    assert all(own != new for own, new in pairs)
    drawn = Counter(new for _, new in pairs)
    assert all(abs(drawn[k] / 6000 - m) < 0.025 for k, m in masses.items()), drawn
    rest = {own: [k for k in masses if k != own] for own in masses}
    other = Counter(rng.choices(rest[own], [masses[k] for k in rest[own]])[0] for own, _ in pairs)
    assert other["a"] / 6000 < 0.4 - 0.05, other  # what the derangement corrects
    assert derange({"a": 0.8, "b": 0.2}, "a", rng) == "b"  # over half: the rest


def test_a_frequent_expectation_is_as_frequent_among_mutants():
    """pytest's monkeypatch tests expect 42 many times: where real expectations are drawn as
    ``distribution`` says, their mutants are 42 as often as they are (and never 42 for a 42)."""
    pool = ["42"] * 5 + ["17", "23", "64", "31", "58", "76"]
    masses = distribution("99", pool)
    assert masses["42"] > 0.25 and {FRESH, FRESH_ROUND} <= set(masses)
    fresh = {FRESH: "99", FRESH_ROUND: "90"}  # a fresh value: one of its own
    real, mutated = [], []
    for seed in range(4000):
        rng = random.Random(seed)
        old = rng.choices(list(masses), list(masses.values()))[0]
        old = fresh.get(old, old)
        new = replacement(old, rng, [*pool, old], [])  # the file holds the real one
        assert new != old and len(new) == 2 and not new.startswith("-")
        real.append(old)
        mutated.append(new)
    for value in ("42", "17"):
        assert abs(mutated.count(value) - real.count(value)) < 0.03 * len(real), value
    rounded = sum(m.endswith("0") for m in mutated) / len(mutated)
    assert abs(rounded - real.count("90") / len(real)) < 0.03 and abs(rounded - ROUND[2]) < 0.03


def test_a_number_is_as_round_as_real_expectations_not_as_the_file_s_literals():
    """pytest's files write round numbers (timeouts, widths: 10, 20, 30) far more often than
    their expectations end in 0; a mutant of a frequent plain expectation (42) drawn among the
    file's other literals alone was told by its roundness. It ends in 0 as often as the file's
    other expectations do (``ROUND`` when it has none), and a fresh round number has
    Benford's leading digit and mostly all zeros after it (``WHOLE``)."""
    pool = ["42"] * 6 + ["10", "20", "30", "60", "10", "20"]
    drawn = [replacement("42", random.Random(s), pool, []) for s in range(2000)]
    assert "42" not in drawn and all(len(d) == 2 for d in drawn)
    rounded = sum(d.endswith("0") for d in drawn) / len(drawn)
    assert abs(rounded - ROUND[2]) < 0.04, rounded  # the file's literals: 6 of 6 after 42
    plain = "".join(f"def test_{i}():\n    assert size({i}) == {2 * i + 21}\n\n" for i in range(12))
    tree = ast.parse(plain)
    rates = shares(mutants.observations(tree, plain, literal_pool(tree, plain)).values())
    assert rates["round"][2] < ROUND[2] / 2, rates  # 12 plain expectations: rarely round
    assert round_share(3, rates) == ROUND[3] and round_share(7) == ROUND_MORE
    fresh = [replacement("4096", random.Random(s), [], [], rates={"round": {4: 1.0}})
             for s in range(600)]
    assert all(len(f) == 4 and f.endswith("0") and f != "4096" for f in fresh)
    whole = sum(f.endswith("000") for f in fresh) / len(fresh)
    assert abs(whole - WHOLE) < 0.07 and Counter(f[0] for f in fresh)["1"] > 0.2 * len(fresh)
    assert all(not replacement("4096", random.Random(s), [], [], rates={"round": {4: 0.0}}
                                        ).endswith("0") for s in range(300))


def test_a_number_keeps_its_sign_and_its_digits_follow_benford():
    assert {replacement("42", random.Random(s), ["-1", "-7", "42"], []) for s in range(200)
            } & {"-1", "-7"} == set()
    assert {replacement("-3", random.Random(s), ["-3"], []) for s in range(100)} <= {
        f"-{d}" for d in range(1, 10)}
    lead = Counter(replacement("4096", random.Random(s), [], [])[0] for s in range(600))
    assert lead["1"] > 3 * lead["9"] and lead["1"] > lead["2"] > lead["5"], lead


def test_the_shares_follow_the_file_s_other_expectations_not_the_replaced_one():
    repeats = "".join(f"def test_{i}():\n    v = make({i + 20})\n    assert size(v) == {i + 20}\n\n"
                      for i in range(6))
    fresh = "".join(f"def test_{i}():\n    v = make({i + 20})\n    assert size(v) == {i + 50}\n\n"
                    for i in range(6))
    prior = SHARES[int][0]
    for text, above in ((repeats, True), (fresh, False)):
        tree = ast.parse(text)
        seen = mutants.observations(tree, text, literal_pool(tree, text))
        assert len(seen) == 6 and all(o[0] is int for o in seen.values())
        rate = shares(seen.values())[int][0]
        assert (rate > prior + 0.05) if above else (rate < prior - 0.2), rate
    # drawn through mutants.candidates: a file whose tests repeat their arguments gets mutants
    # that are its tests' own literals more often than one whose tests do not
    tree = ast.parse(repeats)
    located = {f"t.py::test_{i}": ("t.py", f"test_{i}") for i in range(6)}
    found = [m for s in range(40) for m in mutants.candidates(located, {"t.py": repeats},
                                                              random.Random(s)).values()]
    own = sum(m.new == str(int(m.test.rsplit("_", 1)[1]) + 20) for m in found)
    assert not own, "the real value is never its own mutant"
    assert all(len(m.new) == 2 for m in found) and len(found) == 240


def test_how_often_a_mutant_is_an_argument_follows_the_file_s_other_tests():
    """sympy's graded tests expect one of the call's arguments 12 times in 43, flask's none in
    16: ``shares`` reads it from the file's other tests (``mutants.observations``), and a mutant
    whose real value is no argument takes one as often as makes up for the rest."""
    echoes = "".join(f"def test_{i}():\n    assert pick({i + 2}, 1) == {i + 2}\n\n" for i in range(6))
    never = "".join(f"def test_{i}():\n    assert add({i + 2}, 1) == {i + 3}\n\n" for i in range(6))
    found = {}
    for name, text in (("echoes", echoes), ("never", never)):
        tree = ast.parse(text)
        seen = mutants.observations(tree, text, literal_pool(tree, text))
        assert {o[4] for o in seen.values()} == {name == "echoes"}
        found[name] = shares(seen.values())["argument"]
    assert found["never"] < ARGUMENT < found["echoes"], found
    assert (argument_share({"argument": found["never"]}) < argument_share()
            < argument_share({"argument": found["echoes"]}) == 1.0)
    assert observation("5", ["5"], (), ["'5'"])[4] is None  # no argument of its type
