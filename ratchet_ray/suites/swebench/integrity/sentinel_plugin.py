"""The grader's pytest plugin: it watches, from inside the test process, the machinery that
decides and writes test outcomes, and writes what it saw to a file the grader reads
(docs/grading.md, "The sentinel plugin").

Not imported by ratchet-ray: ``sentinel.Sentinel`` copies its text, with ``RESULT_STEM`` /
``TREE`` / ``NESTED_FLAG`` filled in for one grade, into a root-owned folder of the container,
and pytest loads it first. It runs under the instance's interpreter, so it is written for old
ones too (Python 3.5 syntax, pytest 3.x and pluggy 0.x names tried alongside today's).

What it records (``<RESULT_STEM>.<pid>.json``, written at session start and at unconfigure,
``finished`` true only then):
- ``findings``: evidence of tampering: a watched function, class or code object
  (``WATCHED_MODULES``) replaced, wrapped or added after the session started, or at start-up by
  code from the tree; a watched hook's implementation (``WATCHED_HOOKS``) added by anything but
  a conftest module, or removed; a report that is not pytest's ``TestReport``; a test whose call
  raised reported passed; exit status 0 with failing reports. Each names what and where from.
- ``conftests``: the paths of the conftests pytest loaded in the outermost session, as its plugin
  manager keeps them (``_loaded_conftests``; None where this pytest keeps them otherwise): the
  grader compares them with the tree's own (``lockdown.unexpected_conftests``).
- ``notes``: start-up changes by code outside the tree, and the sentinel's own start-up errors.
- ``raised``/``failed``: node ids whose call raised (not a skip/xfail) / whose report failed;
  ``exitstatus``: pytest's; ``checks``: how many full and quick comparisons, and their seconds.

It looks at session start (the baseline), after collection, after every test and at session end
(in full then). Before and after each test a quick check compares by identity what a full
comparison reads with a snapshot, and compares in full only when anything differs: nothing still
in place at the end of a test is missed. Code in the same process can defeat it: a tripwire, not a proof.
"""

import builtins
import json
import os
import sys
import time
import types
from itertools import repeat
from operator import attrgetter, eq, is_

import pytest

RESULT_STEM = None  # filled in per grade: absolute path prefix of the result files
TREE = None  # filled in per grade: the repository root; functions from there are the patch's
NESTED_FLAG = None  # filled in per grade: environment variable set by the outermost session

WATCHED_MODULES = (
    "_pytest.reports", "_pytest.runner", "_pytest.junitxml", "_pytest.terminal",
    "_pytest.python", "_pytest.main", "_pytest.skipping", "_pytest.outcomes", "_pytest.nodes",
    "_pytest.unittest", "_pytest.assertion.rewrite", "_pytest.assertion", "_pytest.fixtures",
    "_pytest.config", "_pytest.hookspec", "pytest", "pluggy", "pluggy._callers",
    "pluggy.callers", "pluggy._hooks", "pluggy.hooks", "pluggy._manager", "pluggy.manager",
    "pluggy._result")
# Names a test run may add to these namespaces (a conftest's helper on ``pytest``, gettext's
# ``_`` in builtins): only replacements of what was there count.
OPEN_NAMESPACES = ("pytest", "pluggy", "builtins")
BUILTINS = ("AssertionError", "BaseException", "Exception", "isinstance", "issubclass", "type",
            "getattr", "setattr", "hasattr", "open", "print", "compile", "exec", "eval",
            "__import__", "__build_class__")
WATCHED_HOOKS = (
    "pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call",
    "pytest_runtest_teardown", "pytest_runtest_makereport", "pytest_runtest_logreport",
    "pytest_report_teststatus", "pytest_pyfunc_call", "pytest_runtestloop",
    "pytest_sessionfinish", "pytest_terminal_summary", "pytest_report_to_serializable",
    "pytest_report_from_serializable", "pytest_collectreport", "pytest_make_collect_report")
NOT_FAILURES = ("Skipped", "XFailed", "Exit")
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType)
# The builtins the quick check calls, bound now (before any conftest or test module runs), so
# that code replacing them in ``builtins`` later cannot make it answer "unchanged".
_all, _map, _len, _list, _bool, _getattr, _vars, _isinstance, _type = (
    all, map, len, list, bool, getattr, vars, isinstance, type)
_CODE = attrgetter("__code__")
_clock = time.perf_counter
_MISSING = object()

STATE = {"findings": [], "notes": [], "raised": {}, "failed": [], "session": None,
         "pending": {}, "reported": set(), "snapshot": None,
         "checks": {"full": 0, "quick": 0, "full_s": 0.0, "quick_s": 0.0},
         "baseline": None, "hooks": None, "nested": False, "exitstatus": None,
         "manager": None, "conftests": []}


def _members(owner):
    """Functions (and their code objects) and descriptors a class defines itself."""
    found = {}
    for name, value in list(vars(owner).items()):
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for part in ("fget", "fset", "fdel"):
                if getattr(value, part) is not None:
                    found[name + "." + part] = getattr(value, part)
            found[name] = value
        elif isinstance(value, _FUNCTIONS) or isinstance(value, type):
            found[name] = value
    return found


def _watched(modules=WATCHED_MODULES):
    """``{dotted name: object}`` for everything the sentinel keeps an eye on in ``modules``."""
    seen = {}
    for modname in modules:
        module = sys.modules.get(modname)
        if module is None:
            continue
        seen["sys.modules[" + modname + "]"] = module
        for name, value in list(vars(module).items()):
            key = modname + "." + name
            if isinstance(value, type):
                seen[key] = value
                if getattr(value, "__module__", None) == modname:
                    for member, obj in _members(value).items():
                        seen[key + "." + member] = obj
            elif isinstance(value, _FUNCTIONS):
                seen[key] = value
    for name in BUILTINS:
        if hasattr(builtins, name):
            seen["builtins." + name] = getattr(builtins, name)
    for key, value in list(seen.items()):
        code = getattr(value, "__code__", None)
        if code is not None:
            seen[key + ".__code__"] = code
    return seen


def _origin(value):
    """The file a replacement's code comes from (``?`` when it has none)."""
    if isinstance(value, types.CodeType):
        return value.co_filename
    for candidate in (value, getattr(value, "fget", None), getattr(value, "__func__", None),
                      getattr(value, "__call__", None)):
        code = getattr(candidate, "__code__", None)
        if code is not None:
            return code.co_filename
    if isinstance(value, type):
        module = sys.modules.get(getattr(value, "__module__", ""), None)
        return getattr(module, "__file__", None) or "?"
    return "?"


def _in_tree(path):
    """Whether ``path`` is the repository's own code (an environment installed inside the
    tree is not)."""
    parts = path.replace("\\", "/").split("/")
    return (bool(TREE) and os.path.isabs(path) and "site-packages" not in parts
            and "dist-packages" not in parts
            and os.path.abspath(path).startswith(os.path.join(TREE, "")))


def _diff(before, after):
    """``[(what, detail, origin file)]`` for entries changed, removed or added."""
    out = []
    for key, value in before.items():
        now = after.get(key)
        parent = key[:-len(".__code__")] if key.endswith(".__code__") else None
        if parent is not None and after.get(parent) is not before.get(parent):
            continue  # the function itself is reported
        if now is not value:
            detail = "removed" if now is None else "replaced by an object from " + _origin(now)
            out.append((key, detail, "" if now is None else _origin(now)))
    for key in after:
        if key.endswith(".__code__") or key.split(".", 1)[0] in OPEN_NAMESPACES:
            continue
        if key not in before and not isinstance(after[key], type):
            # (a class appearing is no wrapper: py.xml's Junit namespace makes tag classes lazily)
            out.append((key, "added, from " + _origin(after[key]), _origin(after[key])))
    return out


def _hook_impls(config):
    table = {}
    for name in WATCHED_HOOKS:
        caller = getattr(config.pluginmanager.hook, name, None)
        if caller is None:
            continue
        table[name] = [(impl.plugin, impl.function) for impl in caller.get_hookimpls()]
    return table


def _is_conftest(plugin, manager=None):
    """A conftest is what pytest itself loaded as one: a module that its plugin manager keeps
    in its own set of conftests (``_conftest_plugins``, where this pytest has one), from a file
    named conftest.py that exists. An object's ``__file__`` alone proves nothing: anything can
    claim one."""
    if not isinstance(plugin, types.ModuleType):
        return False
    path = getattr(plugin, "__file__", "") or ""
    if os.path.basename(path) != "conftest.py" or not os.path.isfile(path):
        return False
    known = getattr(manager, "_conftest_plugins", None)
    return known is None or any(k is plugin for k in list(known))


def _loaded_conftests(manager):
    """The paths of the conftests ``manager`` loaded, as pytest itself recorded them: the keys of
    its path-to-module table where this pytest has one (pytest < 8), else the name it registered
    each module of its conftest set under (pytest 8: the path it loaded it from, fixed before the
    module ran). Never a module's ``__file__``, which the module's own code can set. None where
    this pytest keeps neither."""
    by_path = getattr(manager, "_conftestpath2mod", None)
    if isinstance(by_path, dict):
        return [str(path) for path in list(by_path)]
    known = getattr(manager, "_conftest_plugins", None)
    if known is None:
        return None
    return [str(manager.get_name(module) or "an unregistered conftest module "
                + getattr(module, "__name__", "?")) for module in list(known)]


def _note_conftests():
    """Add the conftests the outermost session's plugin manager loaded so far to ``STATE``."""
    if STATE["manager"] is None or STATE["conftests"] is None:
        return
    try:
        loaded = _loaded_conftests(STATE["manager"])
    except Exception as exc:  # noqa: BLE001 - an unexpected pytest: say so, list nothing
        loaded = None
        STATE["notes"].append("sentinel conftests: %s: %s" % (type(exc).__name__, exc))
    if loaded is None:
        STATE["conftests"] = None
        return
    STATE["conftests"].extend(p for p in loaded if p not in STATE["conftests"])


def _find(text, key=None):
    """Record a finding once per ``key`` (each watched object is reported where first seen)."""
    key = key or text
    if key not in STATE["reported"] and len(STATE["findings"]) < 200:
        STATE["reported"].add(key)
        STATE["findings"].append(text)


def _snapshot(modules):
    """Everything ``_watched(modules)`` and ``_hook_impls`` read that code could change, held by
    reference (so no object of it can be freed and its id reused): the modules
    ``sys.modules`` holds, each module's namespace and that of each class it defines (keys and
    values in order), whether each class counts as defined there, the watched builtins, the
    ``__code__`` of every watched object that has one, and the watched hooks' implementations.
    ``_unchanged`` compares the live state with it."""
    found = {"names": _list(modules), "modules": [], "spaces": [], "classes": [],
             "class_modules": [], "owners": [], "coded": [], "codes": []}
    for modname in _list(modules) + ["builtins"]:
        found["modules"].append((modname, sys.modules.get(modname)))
    for modname, module in found["modules"][:-1]:
        if module is None:
            continue
        space = _vars(module)
        found["spaces"].append((space, _list(space), _list(space.values())))
        for value in _list(space.values()):
            if _isinstance(value, _type):
                owned = _bool(_getattr(value, "__module__", None) == modname)
                found["classes"].append(value)
                found["class_modules"].append(modname)
                found["owners"].append(owned)
                if owned:
                    members = _vars(value)  # a live view of the class's namespace
                    found["spaces"].append((members, _list(members), _list(members.values())))
    found["builtins"] = _builtins()
    for key, value in _watched(modules).items():
        code = _getattr(value, "__code__", None)
        if code is not None and not key.endswith(".__code__"):
            found["coded"].append(value)
            found["codes"].append(code)
    found["hooks"] = _hook_triples()
    return found


def _owners(classes, modnames):
    """Whether each class counts as defined in its module, as ``_watched`` decides it."""
    return _map(_bool, _map(eq, _map(_getattr, classes, repeat("__module__"), repeat(None)),
                            modnames))


def _builtins():
    """The watched builtins, as ``_watched`` reads them (``_MISSING`` for one not there)."""
    return [_getattr(builtins, name, _MISSING) for name in BUILTINS]


def _hook_triples():
    """``_hook_impls`` flattened: name, plugin, function of each implementation, in order."""
    if STATE["session"] is None or STATE["hooks"] is None:
        return []
    return [part for name, impls in _hook_impls(STATE["session"].config).items()
            for plugin, function in impls for part in (name, plugin, function)]


def _same(live, held):
    """Whether two lists hold the same objects in the same order (identity, never ``==``)."""
    return _len(live) == _len(held) and _all(_map(is_, live, held))


def _unchanged(snapshot):
    """Whether the live state is, object for object, the one ``snapshot`` holds; any doubt
    (an exception, a namespace resized while read) answers False."""
    try:
        for modname, module in snapshot["modules"]:
            if sys.modules.get(modname) is not module:
                return False
        for space, keys, values in snapshot["spaces"]:
            # (a namespace resized while ``map`` walks it raises: a full comparison)
            if not (_len(space) == _len(keys) and _all(_map(is_, space, keys))
                    and _all(_map(is_, space.values(), values))):
                return False
        return (_list(_owners(snapshot["classes"], snapshot["class_modules"]))
                == snapshot["owners"]
                and _same(_builtins(), snapshot["builtins"])
                and _all(_map(is_, _map(_CODE, snapshot["coded"]), snapshot["codes"]))
                and _same(_hook_triples(), snapshot["hooks"]))
    except Exception:  # noqa: BLE001 - a state that cannot be read is compared in full
        return False


def _check(when, quick=False):
    """Compare the machinery with the session-start baseline; every difference is a finding.
    ``quick`` (after a test): skip the comparison when nothing it reads changed since the last
    one (module docstring); the snapshot is taken before comparing, so a change made while the
    comparison runs differs from it at the next check."""
    if STATE["baseline"] is None:
        return
    started = _clock()
    modules = [m for m in WATCHED_MODULES if "sys.modules[" + m + "]" in STATE["baseline"]]
    snapshot = STATE["snapshot"]
    if quick and snapshot is not None and snapshot["names"] == modules and _unchanged(snapshot):
        kind = "quick"
    else:
        kind = "full"
        if quick:
            _take_snapshot(modules)
        _compare(when, modules)
    STATE["checks"][kind] += 1
    STATE["checks"][kind + "_s"] += _clock() - started


def _take_snapshot(modules):
    try:
        STATE["snapshot"] = _snapshot(modules)
    except Exception as exc:  # noqa: BLE001 - no snapshot: every check is a full one
        STATE["snapshot"] = None
        note = "sentinel snapshot: %s: %s" % (type(exc).__name__, exc)
        if note not in STATE["notes"] and len(STATE["notes"]) < 50:
            STATE["notes"].append(note)


def _compare(when, modules):
    try:
        for key, detail, _ in _diff(STATE["baseline"], _watched(modules)):
            _find("%s: %s %s" % (when, key, detail), key)
        now = _hook_impls(STATE["session"].config) if STATE["hooks"] is not None else {}
        for name, impls in (STATE["hooks"] or {}).items():
            current = now.get(name, [])
            for plugin, function in impls:
                if not any(function is f for _, f in current):
                    _find("%s: the %s implementation %s was unregistered"
                          % (when, name, getattr(function, "__qualname__", function)),
                          ("gone", name, id(function)))
            for plugin, function in current:
                if (not any(function is f for _, f in impls)
                        and not _is_conftest(plugin, STATE["session"].config.pluginmanager)):
                    _find("%s: a %s implementation was registered by %s (%s)"
                          % (when, name, getattr(plugin, "__name__", type(plugin).__name__),
                             _origin(function)), ("new", name, id(function)))
    except Exception as exc:  # a check that cannot run is itself a sign of interference
        _find("%s: the sentinel's check failed (%s: %s)" % (when, type(exc).__name__, exc))


def _write():
    if not RESULT_STEM:
        return
    _note_conftests()
    data = {"pid": os.getpid(), "nested": STATE["nested"], "findings": STATE["findings"],
            "notes": STATE["notes"], "raised": STATE["raised"], "failed": STATE["failed"],
            "exitstatus": STATE["exitstatus"], "finished": STATE["exitstatus"] is not None,
            "checks": STATE["checks"], "conftests": STATE["conftests"]}
    path = "%s.%d.json" % (RESULT_STEM, os.getpid())
    with open(path, "w") as handle:
        json.dump(data, handle)


def _start():
    """At import (before any conftest or test module): the first look, and the report class."""
    if NESTED_FLAG:
        STATE["nested"] = bool(os.environ.get(NESTED_FLAG))
        os.environ[NESTED_FLAG] = "1"
    try:
        from _pytest.reports import TestReport
        STATE["report_class"] = TestReport
        STATE["startup"] = _watched()
    except Exception as exc:  # an unexpected pytest: watch less, say so
        STATE["notes"].append("sentinel start-up: %s: %s" % (type(exc).__name__, exc))


_start()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    """Start-up changes by repository code are findings; the baseline for later checks."""
    STATE["session"] = session
    if STATE["manager"] is None:  # the outermost session's (a test's in-process pytest comes later)
        STATE["manager"] = session.config.pluginmanager
    try:
        STATE["hooks"] = _hook_impls(session.config)
    except Exception as exc:  # a pluggy without get_hookimpls: no hook checks
        STATE["notes"].append("sentinel hooks: %s: %s" % (type(exc).__name__, exc))
    try:
        startup = STATE.get("startup") or {}
        early = [m for m in WATCHED_MODULES if "sys.modules[" + m + "]" in startup]
        for key, detail, origin in _diff(startup, _watched(early)):
            target = STATE["findings"] if _in_tree(origin) else STATE["notes"]
            text = "start-up: %s %s" % (key, detail)
            if text not in target and len(target) < 50:
                target.append(text)
        # The snapshot before the baseline: a change made in between differs from it.
        _take_snapshot([m for m in WATCHED_MODULES if sys.modules.get(m) is not None])
        STATE["baseline"] = _watched()
    except Exception as exc:  # an unexpected pytest: watch less, say so
        STATE["notes"].append("sentinel baseline: %s: %s" % (type(exc).__name__, exc))
    _write()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    outcome = yield
    excinfo = getattr(outcome, "excinfo", None)
    if excinfo is not None and excinfo[0].__name__ not in NOT_FAILURES:
        STATE["pending"][item.nodeid] = excinfo[0].__name__


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    """The report against the call's own outcome; a rerun (pytest-rerunfailures) drops what the
    attempt before it left."""
    cls = STATE.get("report_class")
    node = report.nodeid
    if cls is not None and type(report) is not cls:
        _find("%s: its %s report is a %s from %s, not pytest's TestReport"
              % (node, report.when, type(report).__name__, _origin(type(report))), "class")
    raised = STATE["pending"].pop(node, None) if report.when == "call" else None
    if report.outcome == "rerun":
        STATE["raised"].pop(node, None)
        STATE["failed"] = [n for n in STATE["failed"] if n != node]
        return
    if raised is not None:
        STATE["raised"][node] = raised
        if report.outcome == "passed":
            _find("%s raised %s but its report says passed" % (node, raised))
    if report.outcome == "failed" and node not in STATE["failed"]:
        STATE["failed"].append(node)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtestloop(session):
    """Collection imported the test modules and the code under test: compare once before the
    first test, so that the check after it starts from a snapshot of the collected session."""
    _check("after collection", quick=True)
    yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    _check("after " + item.nodeid, quick=True)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    yield
    _check("at the end")  # after the JUnit report is written, before plugins unregister


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    session = STATE["session"]
    status = getattr(session, "exitstatus", None)
    try:
        status = int(status) if status is not None else -1
    except (TypeError, ValueError):
        status = -1
    if status == 0 and STATE["failed"]:
        _find("the session's exit status is 0 although %d report(s) failed" % len(STATE["failed"]))
    STATE["exitstatus"] = status
    _write()
