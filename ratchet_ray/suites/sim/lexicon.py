"""The fixed vocabulary of the simulated world: 16 failure themes of six words each, and the
verbs that open a pattern phrase. Shared by the world (task texts, pattern phrases, skill drafts)
and the ``sim`` embedder (theme words pull a text towards their theme's direction), and
independent of any seed, so the embedder needs no world to be built.
"""

from __future__ import annotations

from collections import Counter

THEMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("boundary", ("range", "bound", "index", "offset", "endpoint", "inclusive")),
    ("emptiness", ("empty", "blank", "vacant", "absent", "hollow", "void")),
    ("precision", ("float", "rounding", "decimal", "truncate", "epsilon", "fraction")),
    ("aliasing", ("mutate", "alias", "inplace", "shared", "copy", "reference")),
    ("recursion", ("recursion", "depth", "stack", "basecase", "recurse", "unwinding")),
    ("ordering", ("sort", "stable", "ascending", "descending", "comparator", "rank")),
    ("encoding", ("unicode", "encoding", "bytes", "codec", "ascii", "utf")),
    ("arithmetic", ("overflow", "modulo", "integer", "power", "wraparound", "divisor")),
    ("uniqueness", ("duplicate", "unique", "distinct", "repeated", "dedupe", "multiset")),
    ("sign", ("negative", "sign", "absolute", "minus", "signed", "below")),
    ("parsing", ("parse", "split", "delimiter", "whitespace", "strip", "tokenize")),
    ("typing", ("cast", "conversion", "coerce", "string", "numeric", "typed")),
    ("nesting", ("nested", "flatten", "inner", "outer", "level", "tree")),
    ("mapping", ("dict", "keys", "lookup", "mapping", "hashable", "entry")),
    ("looping", ("loop", "early", "break", "continue", "premature", "iteration")),
    ("matching", ("regex", "greedy", "anchor", "escape", "capture", "substring")),
)
VERBS = ("mishandles", "ignores", "misreads", "skips", "confuses", "drops")
# Words a skill draft uses to say HOW it addresses its theme; two drafts of one theme with
# different aspects are different skills to the embedder.
ASPECTS = ("buffer", "window", "cursor", "accumulator", "sentinel", "pointer", "counter",
           "builder", "helper", "snapshot", "queue", "scanner", "ledger", "cache", "marker",
           "filter", "reducer", "walker", "probe", "table")
# Structure and boilerplate the embedder nearly ignores: YAML keys of a skill, the task template.
STRUCTURE = frozenset({
    "id", "name", "version", "description", "intent", "signals", "match", "signals_match", "tags",
    "preconditions", "status", "active", "deprecated", "candidate", "author", "synthesized",
    "do", "not", "retire", "false", "true", "guidance", "applies", "when", "key", "insight",
    "common", "pitfalls", "verify", "before", "returning", "auto", "sim", "ref", "the", "and",
    "write", "function", "that", "transforms", "batch", "records", "make", "sure", "handles",
    "cases", "case", "correctly", "tasks", "where", "matter", "handle", "task", "involves",
    "check", "trace", "with", "before", "for", "use", "skill"})
THEME_OF_WORD: dict[str, int] = {w: k for k, (_, words) in enumerate(THEMES) for w in words}


def theme_votes(words: list[str]) -> dict[int, int]:
    """How many of ``words`` belong to each theme (themes without a word are absent)."""
    return dict(Counter(THEME_OF_WORD[w] for w in words if w in THEME_OF_WORD))
