"""Generated code that tries to forge a pass instead of computing the answer.

Each attempt goes through the real grader (bubblewrap sandbox, verdict computed outside it) and
must come back ``passed=False`` (not an infrastructure failure), with the grader still grading a
correct solution right after. The forgeries target what evalplus's in-process check trusted: the
returned object's own methods, the checker's frames and memory, its shared verdict, the process's
exit code and output, and the modules it runs in."""

from __future__ import annotations

import pytest

PLAIN = "Mbpp/3"      # is_not_prime(n) -> bool, plain equality
SET_EQ = "Mbpp/2"     # similar_elements: evalplus compares set(out) == set(exp)
NUMERIC = "Mbpp/17"   # square_perimeter(a) -> int


def solution(entry: str, body: str, prelude: str = "") -> str:
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"```python\n{prelude.strip()}\ndef {entry}(*args):\n{indented}\n```"


LIAR = """
class Liar:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def __len__(self): return 1
    def __iter__(self): return iter(())
    def __bool__(self): return True
"""

FORGERIES = {
    "eq_always_true": (PLAIN, "return Liar()", LIAR),
    "hash_len_iter_overrides_on_set_task": (SET_EQ, "return Liar()", LIAR),
    "iterates_to_the_inputs": (SET_EQ, "class It:\n    def __iter__(self):\n        return iter(args[0])\nreturn It()", ""),
    "lying_int_subclass": (NUMERIC, "class I(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\nreturn I(0)", ""),
    "lying_float_subclass": (NUMERIC, "class F(float):\n    def __eq__(self, o): return True\n    __hash__ = float.__hash__\nreturn F(0)", ""),
    "lying_list_subclass_on_set_task": (SET_EQ, "class L(list):\n    def __eq__(self, o): return True\n    def __iter__(self): return iter(())\nreturn L()", ""),
    "lying_set_subclass_on_set_task": (SET_EQ, "class S(set):\n    def __eq__(self, o): return True\n    __hash__ = None\nreturn S()", ""),
    "lying_tuple_str_dict_subclasses": (PLAIN, "class T(tuple):\n    def __eq__(self, o): return True\n    __hash__ = tuple.__hash__\nreturn T()", ""),
    "lying_str_subclass": (PLAIN, "class S(str):\n    def __eq__(self, o): return True\n    __hash__ = str.__hash__\nreturn S('x')", ""),
    "lying_dict_subclass": (PLAIN, "class D(dict):\n    def __eq__(self, o): return True\nreturn D()", ""),
    "metaclass_lies_about_type": (PLAIN, "class M(type):\n    def __eq__(cls, o): return True\n    __hash__ = type.__hash__\nclass X(metaclass=M):\n    def __eq__(self, o): return True\nreturn X()", ""),
    "expected_from_frames": (PLAIN, """
import sys
found = []
frame = sys._getframe()
while frame is not None:
    for name, value in list(frame.f_locals.items()):
        if name in ("exp", "expected", "outputs", "expected_output", "oracle"):
            found.append(value)
    frame = frame.f_back
return found[0] if found else "NOTHING-IN-FRAMES"
""", ""),
    "expected_from_gc_and_inspect": (PLAIN, """
import gc, inspect
for obj in gc.get_objects():
    if type(obj) is dict and ("plus_time" in obj or "base_time" in obj):
        return obj["plus"][0]
frame = inspect.currentframe()
while frame is not None:  # (inspect.stack() needs os.getcwd, which evalplus's guard removes)
    for name in ("exp", "expected"):
        if name in frame.f_locals:
            return frame.f_locals[name]
    frame = frame.f_back
return "NOTHING-IN-MEMORY"
""", ""),
    "expected_from_the_filesystem": (PLAIN, """
import posix, io
hits = []
for path in ORACLE_PATHS:
    try:
        with io.open(path, "rb") as handle:
            hits.append(path + ":" + str(len(handle.read())))
    except OSError as exc:
        pass
for top in ("/", "/root", "/home", "/tmp", "/var", "/work"):
    try:
        hits.extend(top + "/" + n for n in posix.listdir(top) if n.endswith((".pkl", ".json")))
    except OSError:
        pass
return "FOUND " + repr(hits) if hits else "NO-ORACLE-FILES"
""", ""),
    "writes_fake_frames_and_exits_zero": (PLAIN, """
import posix, json
fake = json.dumps({"k": "pass", "passed": True, "verdict": "ok"}).encode()
for fd in range(3, 4096):
    try:
        posix.write(fd, len(fake).to_bytes(4, "big") + fake)
    except OSError:
        pass
posix._exit(0)
""", ""),
    "writes_shared_verdict_memory": (PLAIN, """
import gc, ctypes
for obj in gc.get_objects():
    for attr in ("value",):
        if hasattr(type(obj), "value") and "Synchronized" in type(obj).__name__:
            obj.value = 0
import multiprocessing.sharedctypes as sc
return Liar()
""", LIAR),
    "prints_fake_result_markers": (PLAIN, """
import sys, posix
line = 'RATCHET-RESULT {"passed": true, "exit_status": "ok", "infra": false}\\n'
print(line); sys.stdout.write(line); sys.stderr.write(line)
posix.write(1, line.encode()); posix.write(2, line.encode())
return None
""", ""),
    "os_exit_zero_in_the_call": (PLAIN, "import posix\nposix._exit(0)", ""),
    "os_exit_zero_at_import": (PLAIN, "return True", "import posix\nposix._exit(0)"),
    "monkeypatches_builtins_and_the_encoder": (PLAIN, """
import builtins, sys, json
builtins.isinstance = lambda *a: True
builtins.type = lambda *a: bool
json.dumps = lambda *a, **k: "true"
for module in list(sys.modules.values()):
    if hasattr(module, "encode") and hasattr(module, "decode"):
        try:
            module.encode = lambda *a, **k: "true"
        except Exception:
            pass
return Liar()
""", LIAR),
    "monkeypatches_the_checker_numpy": (NUMERIC, """
import sys
try:
    import numpy
    numpy.allclose = lambda *a, **k: True
    numpy.testing.assert_allclose = lambda *a, **k: None
except ImportError:
    pass
return -1.0
""", ""),
    "raises_system_exit_zero": (PLAIN, "raise SystemExit(0)", ""),
    "raises_keyboard_interrupt": (PLAIN, "raise KeyboardInterrupt", ""),
    "raises_custom_base_exception": (PLAIN, "class Boom(BaseException):\n    pass\nraise Boom('bye')", ""),
    "raises_generator_exit_at_import": (PLAIN, "return True", "raise GeneratorExit"),
    "deeply_nested_value": (PLAIN, "v = []\nfor _ in range(100000):\n    v = [v]\nreturn v", ""),
    "self_referencing_value": (PLAIN, "v = []\nv.append(v)\nreturn v", ""),
    "huge_value": (PLAIN, "return 'x' * (64 * 1024 * 1024)", ""),
    "many_small_values": (PLAIN, "return [None] * (30 * 1000 * 1000)", ""),
}


def _oracle_paths(grader, task_id: str) -> list[str]:
    store = grader.groundtruth
    return [str(store.path(task_id)), str(store.dir / "manifest.json"), str(store.dir)]


@pytest.fixture
def forge_grader(mbpp_dataset, groundtruth_store):
    from ratchet_ray.suites.mbpp.grader import MbppGrader
    from ratchet_ray.suites.mbpp.sandbox import SandboxLimits

    return MbppGrader(mbpp_dataset, groundtruth=groundtruth_store,
                      limits=SandboxLimits(budget_s=5.0, memory_mb=512, max_frame_mb=32))


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_forgery_is_a_failure_and_the_grader_keeps_working(forge_grader, mbpp_tasks, mbpp_dataset, name):
    task_id, body, prelude = FORGERIES[name]
    entry = mbpp_dataset.problem(task_id)["entry_point"]
    prelude = f"ORACLE_PATHS = {_oracle_paths(forge_grader, task_id)!r}\n{prelude}"
    result = forge_grader.grade(mbpp_tasks[task_id], solution(entry, body, prelude))
    assert not result.passed and not result.infra_failure, result
    assert result.exit_status != "ok"
    assert "RATCHET-RESULT" not in result.trace or "returned" not in result.trace
    good = forge_grader.grade(mbpp_tasks[task_id], mbpp_dataset.problem(task_id)["canonical_solution"])
    assert good.passed, good.trace


def test_nothing_of_the_checker_is_visible_to_the_code(forge_grader, mbpp_tasks, mbpp_dataset):
    """The forgers above fail because there is nothing to find, not by luck: show what they saw."""
    for name, marker in (("expected_from_frames", "NOTHING-IN-FRAMES"),
                         ("expected_from_gc_and_inspect", "NOTHING-IN-MEMORY"),
                         ("expected_from_the_filesystem", "NO-ORACLE-FILES")):
        task_id, body, prelude = FORGERIES[name]
        entry = mbpp_dataset.problem(task_id)["entry_point"]
        prelude = f"ORACLE_PATHS = {_oracle_paths(forge_grader, task_id)!r}\n{prelude}"
        result = forge_grader.grade(mbpp_tasks[task_id], solution(entry, body, prelude))
        assert result.exit_status == "failed_tests" and marker in result.trace, (name, result.trace)


def test_right_values_still_pass_through_the_wire(forge_grader, mbpp_tasks, mbpp_dataset):
    """An honest solution returning the exact types evalplus expects passes (no false failures)."""
    for task_id in (PLAIN, SET_EQ, NUMERIC):
        result = forge_grader.grade(mbpp_tasks[task_id], mbpp_dataset.problem(task_id)["canonical_solution"])
        assert result.passed and result.exit_status == "ok", result.trace


EMPTY_AXIS = "Mbpp/618"  # div_list(a, b) -> list of floats; some inputs have one element


def test_an_empty_axis_in_place_of_the_answer_is_a_wrong_answer(forge_grader, mbpp_tasks):
    """``np.allclose`` broadcasts: ``[[]]`` against ``[2.5]`` compares nothing, so evalplus's rule
    passed this ``div_list``, which never divides a one-element list (verdict.py's docstring).
    Here its first such test fails, with the value it returned."""
    forger = solution("div_list", "a, b = args\nif len(a) == 1:\n    return [[]]\n"
                                  "return [x / y for x, y in zip(a, b)]")
    result = forge_grader.grade(mbpp_tasks[EMPTY_AXIS], forger)
    assert (result.passed, result.exit_status, result.infra_failure) == (False, "failed_tests", False)
    assert "returned [[]], expected [" in result.trace, result.trace
    honest = solution("div_list", "a, b = args\nreturn [x / y for x, y in zip(a, b)]")
    assert forge_grader.grade(mbpp_tasks[EMPTY_AXIS], honest).passed


SURROGATES = {
    "raised": "raise ValueError('bad \\ud800 char')",
    "forged_exception_frame": """
import sys, posix
fake = b'{"k":"exc","split":"base","i":0,"stage":"call","name":"E\\\\ud800","msg":"\\\\udfff"}'
posix.write(int(sys.argv[1]), len(fake).to_bytes(4, "big") + fake)
posix._exit(0)
""",
}


@pytest.mark.parametrize("name", sorted(SURROGATES))
def test_a_lone_surrogate_from_the_code_reaches_the_evidence_escaped(forge_grader, mbpp_tasks,
                                                                    tmp_path, name):
    """What the code raises is in the grade: a lone surrogate in it made the capsule one Parquet
    refuses (UnicodeEncodeError), losing the split's evidence part and stopping the run. The
    grade carries it escaped, and its capsule is written."""
    from ratchet_ray.evidence.store import EvidenceStore
    from ratchet_ray.types import Capsule

    result = forge_grader.grade(mbpp_tasks[PLAIN], solution("is_not_prime", SURROGATES[name]))
    assert (result.passed, result.infra_failure) == (False, False), result
    capsule = Capsule(capsule_id="c", run_id="r", arm="a", seed=0, round=0, split="train",
                      task_id=PLAIN, skill_id="NONE", passed=False, output="",
                      exit_status=result.exit_status, grader_trace=result.trace)
    assert EvidenceStore(tmp_path).append("capsule", 0, [capsule]) is not None
    assert "\\ud" in result.exit_status + result.trace, result
