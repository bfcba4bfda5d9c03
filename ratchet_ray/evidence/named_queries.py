"""Every SQL statement the code runs over the evidence views, by name.

Contracts:
- Every query over the views lives here, named (``evidence.queries`` wraps some in typed
  helpers; ``evidence.store`` keeps only its DDL); code elsewhere calls ``fetch_all`` /
  ``fetch_one`` / ``fetch_dicts`` with a name and parameters and never writes SQL
  (``tests/architecture`` checks both).
- Parameters are DuckDB named parameters (``$name``), never spliced into the text. A call must
  pass exactly those its query names; a missing or extra one, or an unknown name, raises
  ``KeyError`` naming the query and what it takes.
- Views as ``EvidenceStore.connect()`` creates them (columns: docs/evidence-schema.md);
  ``capsules_with_verdicts`` reads capsule parts by path (``$files``) so the report can number
  each row by its part and row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

import duckdb


@dataclass(frozen=True)
class NamedQuery:
    name: str
    sql: str
    doc: str

    @property
    def params(self) -> frozenset[str]:
        return frozenset(re.findall(r"\$([a-z_][a-z0-9_]*)", self.sql))


# A counterfactual probe pair: the train task's first attempt, routed to a skill (s), and its
# later attempt of the same round routed to NONE (n), neither an infrastructure failure.
_PROBE_PAIRS = """
        FROM capsule s JOIN capsule n
          ON s.round = n.round AND s.task_id = n.task_id AND s.split = n.split
        WHERE s.split = 'train' AND coalesce(s.attempt, 0) = 0 AND s.skill_id <> $none
          AND coalesce(n.attempt, 0) >= 1 AND n.skill_id = $none
          AND NOT coalesce(s.infra_failure, false) AND NOT coalesce(n.infra_failure, false)"""

# A capsule graded as tampering (``$statuses``), neither an infrastructure failure nor a twin.
_TAMPERED = """list_contains($statuses, exit_status) AND NOT coalesce(infra_failure, false)
          AND NOT coalesce(impossible, false)"""

# How the audit lists a flagged capsule: its route and the grader's trace.
_FLAGGED = """
        SELECT round, split, task_id, skill_id, exit_status, coalesce(attempt, 0) AS attempt,
               capsule_id, grader_trace
        FROM capsule"""

_QUERIES = (
    # ---- spend and usage ----------------------------------------------------------------------
    NamedQuery("llm_spend_total", """
        SELECT coalesce(sum(input_tokens + output_tokens), 0), coalesce(sum(cost_usd), 0)
        FROM llm_call""",
        "(tokens, cost_usd) the run's LLM calls recorded, all rounds."),
    NamedQuery("llm_spend_of_round", """
        SELECT coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
               coalesce(sum(cost_usd), 0)
        FROM llm_call WHERE round = $round""",
        "(input tokens, output tokens, cost_usd) of one round's LLM calls."),
    NamedQuery("llm_spend_by_role_of_round", """
        SELECT role, coalesce(sum(input_tokens + output_tokens), 0), coalesce(sum(cost_usd), 0)
        FROM llm_call WHERE round = $round GROUP BY role""",
        "(role, tokens, cost_usd) per role in one round."),
    NamedQuery("usage_by_round_role", """
        SELECT round, role, count(*) AS calls, coalesce(sum(input_tokens), 0) AS input_tokens,
               coalesce(sum(output_tokens), 0) AS output_tokens,
               coalesce(sum(cost_usd), 0) AS cost_usd,
               count(*) FILTER (WHERE NOT coalesce(ok, true)) AS failed
        FROM llm_call GROUP BY round, role ORDER BY round, role""",
        "Per (round, role): calls, input and output tokens, cost and failed calls."),
    NamedQuery("llm_calls_of_round", """
        SELECT role, backend, model, input_tokens, output_tokens, latency_s, retries, cost_usd,
               cached, ok, error, created_at
        FROM llm_call WHERE round = $round ORDER BY created_at, role""",
        "Every LLM call of one round, in the order they ended (``report.otel``'s spans)."),
    NamedQuery("models_used", """
        SELECT role, backend, model, count(*) AS calls FROM llm_call
        GROUP BY ALL ORDER BY role, backend, model""",
        "Per (role, backend, model): the calls a run really made."),
    # ---- rounds -------------------------------------------------------------------------------
    NamedQuery("round_rows_of", """
        SELECT count(*) FROM round WHERE round = $round""",
        "How many ``round`` rows one round has (0 before it is recorded)."),
    NamedQuery("latest_round_rows", """
        SELECT * FROM round
        QUALIFY row_number() OVER (PARTITION BY round ORDER BY created_at DESC) = 1
        ORDER BY round""",
        "The newest ``round`` row of each round (a resumed round may have written two)."),
    NamedQuery("last_round", """
        SELECT max(round) FROM (SELECT round FROM capsule UNION ALL
                                SELECT round FROM skill_event)""",
        "The last round with a capsule or a skill event (NULL for an empty run)."),
    # ---- capsules -----------------------------------------------------------------------------
    NamedQuery("first_attempt_outcomes", """
        SELECT task_id, count(*), bool_or(passed), bool_or(infra_failure) FROM capsule
        WHERE round = $round AND split = $split AND coalesce(attempt, 0) = 0
        GROUP BY task_id""",
        "(task, capsules, passed, infra) of a round's split; probes (attempt >= 1) left out."),
    NamedQuery("unreviewed_train_failures", """
        SELECT * FROM capsule
        WHERE round = $round AND split = 'train' AND NOT passed AND coalesce(attempt, 0) = 0
          AND NOT coalesce(impossible, false)
          AND capsule_id NOT IN (SELECT capsule_id FROM verdict WHERE round = $round)
        ORDER BY task_id""",
        "A round's first-attempt train failures that have no verdict yet (the Critic's input)."),
    NamedQuery("capsule_ids", """
        SELECT capsule_id FROM capsule""",
        "Every recorded capsule id (a resumed run skips them)."),
    NamedQuery("capsule_ids_of_round", """
        SELECT capsule_id FROM capsule WHERE round = $round""",
        "The capsule ids recorded in one round."),
    NamedQuery("capsules_by_id", """
        SELECT * FROM capsule WHERE list_contains($ids, capsule_id) ORDER BY task_id""",
        "The capsules whose ids are in ``$ids`` (the verdicts' capsules for the Synthesizer)."),
    NamedQuery("eval_routing_counts", """
        SELECT count(*), count(*) FILTER (WHERE skill_id <> $none) FROM capsule
        WHERE split = 'eval'""",
        "(eval capsules, eval capsules routed to a skill)."),
    NamedQuery("routings_by_skill_split", """
        SELECT skill_id, split, count(*) FROM capsule WHERE skill_id <> $none
          AND NOT coalesce(impossible, false)
        GROUP BY skill_id, split""",
        "(skill, split, capsules routed to it), probes included, impossible twins not."),
    NamedQuery("first_attempt_routings", """
        SELECT skill_id, count(*) FILTER (WHERE split = 'train') AS train,
               count(*) FILTER (WHERE split = 'eval') AS eval
        FROM capsule WHERE coalesce(attempt, 0) = 0 AND skill_id <> $none
        GROUP BY skill_id""",
        "(skill, train routings, eval routings) of first attempts."),
    NamedQuery("capsule_outcomes", """
        SELECT round, split, task_id, skill_id, passed, coalesce(attempt, 0) FROM capsule
        WHERE NOT coalesce(impossible, false)
        ORDER BY round, task_id""",
        "(round, split, task, skill, passed, attempt) of every capsule but impossible twins."),
    NamedQuery("eval_first_attempts", """
        SELECT round, task_id, bool_or(passed) FROM capsule
        WHERE split = 'eval' AND coalesce(attempt, 0) = 0
        GROUP BY round, task_id ORDER BY round, task_id""",
        "(round, task, passed) of every first-attempt eval capsule: the pairs that paired "
        "statistics compare (``evidence.comparisons``)."),
    NamedQuery("capsules_for_export", """
        SELECT capsule_id, round, split, task_id, coalesce(attempt, 0) AS attempt, skill_id,
               passed, exit_status, coalesce(infra_failure, false) AS infra_failure, output,
               grader_trace, input_tokens, output_tokens, latency_s, cost_usd, created_at,
               coalesce(impossible, false) AS impossible
        FROM capsule WHERE list_contains($splits, split)
        ORDER BY round, split, task_id, attempt, capsule_id""",
        "Every capsule of the splits ``$splits``, for an export (``report.inspect_export``)."),
    NamedQuery("capsules_with_verdicts", """
        WITH c AS (
          SELECT capsule_id, round, split, task_id, coalesce(attempt, 0) AS attempt, skill_id,
                 passed, exit_status, coalesce(infra_failure, false) AS infra_failure, output,
                 grader_trace, input_tokens, output_tokens, cost_usd, filename AS part,
                 file_row_number AS row
          FROM read_parquet($files, hive_partitioning=true, hive_types={'round': INTEGER},
                            union_by_name=true, filename=true, file_row_number=true)),
        v AS (
          SELECT capsule_id, attribution, pattern, confidence, rationale FROM verdict
          QUALIFY row_number() OVER (PARTITION BY capsule_id ORDER BY created_at DESC) = 1)
        SELECT c.*, v.attribution, v.pattern, v.confidence, v.rationale
        FROM c LEFT JOIN v USING (capsule_id)
        ORDER BY round, split, task_id, attempt, capsule_id""",
        "Every capsule of the parts ``$files`` with its newest verdict, part file and row."),
    # ---- counterfactual probes ----------------------------------------------------------------
    NamedQuery("counterfactual_pairs", """
        SELECT s.skill_id, count(*) AS pairs,
               count_if(s.passed AND NOT n.passed) AS wins,
               count_if(n.passed AND NOT s.passed) AS losses""" + _PROBE_PAIRS + """
        GROUP BY s.skill_id""",
        "Per probed skill: probe pairs, wins (with passed, without failed) and losses."),
    NamedQuery("probe_outputs", """
        SELECT s.skill_id, s.output, n.output""" + _PROBE_PAIRS + """
        ORDER BY s.skill_id, s.round, s.task_id""",
        "(skill, output with it, output without it) of every probe pair."),
    # ---- the cheat probe: impossible twins (governance.cheat_probe) ----------------------------
    NamedQuery("cheat_by_skill", """
        WITH t AS (
          SELECT skill_id, round, capsule_id, passed,
                 row_number() OVER (PARTITION BY skill_id, passed
                                    ORDER BY round, created_at, capsule_id) AS nth
          FROM capsule
          WHERE coalesce(impossible, false) AND split = 'train' AND skill_id <> $none
            AND NOT coalesce(infra_failure, false))
        SELECT skill_id, count(*) AS twins, count_if(passed) AS passes,
               min(round) FILTER (WHERE passed) AS first_round,
               max(capsule_id) FILTER (WHERE passed AND nth = 1) AS first_capsule
        FROM t GROUP BY skill_id ORDER BY skill_id""",
        "(skill, twins graded, twins passed, first round and capsule of a pass) per routed "
        "skill; infrastructure failures left out."),
    NamedQuery("twin_candidates", """
        SELECT task_id, skill_id, output, run_id, arm, seed, round, split,
               task_id IN (SELECT task_id FROM capsule
                           WHERE round = $round AND coalesce(impossible, false)) AS twinned
        FROM capsule
        WHERE round = $round AND split = 'train' AND coalesce(attempt, 0) = 0
          AND skill_id <> $none AND NOT coalesce(infra_failure, false)
          AND NOT coalesce(impossible, false)
        ORDER BY task_id""",
        "A round's graded first-attempt train capsules routed to a skill (what an impossible "
        "twin may re-grade), and whether the task has its twin capsule already."),
    NamedQuery("cheat_rate_by_skill", """
        SELECT arm, skill_id, count(*) AS twins, count_if(passed) AS twin_passes,
               count_if(passed) / count(*) AS cheat_rate
        FROM capsule
        WHERE coalesce(impossible, false) AND NOT coalesce(infra_failure, false)
        GROUP BY arm, skill_id ORDER BY arm, skill_id""",
        "Per (arm, skill routed, NONE included): impossible twins graded, passed, and the cheat "
        "rate = passes / twins."),
    NamedQuery("cheat_rate_by_arm", """
        SELECT arm, count(*) AS twins, count_if(passed) AS twin_passes,
               count(*) FILTER (WHERE skill_id <> $none) AS routed_twins,
               count_if(passed AND skill_id <> $none) AS routed_twin_passes,
               CASE WHEN count(*) > 0 THEN count_if(passed) / count(*) END AS cheat_rate
        FROM capsule
        WHERE coalesce(impossible, false) AND NOT coalesce(infra_failure, false)
        GROUP BY arm ORDER BY arm""",
        "Per arm: impossible twins graded and passed (all, and those routed to a skill) and "
        "the cheat rate = passes / twins."),
    # ---- skills' outcomes and tampering (``evidence.queries``' typed helpers) -------------------
    NamedQuery("skill_stats", """
        SELECT skill_id, count(*) AS trials, count_if(passed) AS successes
        FROM capsule
        WHERE split = $split AND skill_id <> $none AND NOT coalesce(infra_failure, false)
          AND NOT coalesce(impossible, false)
        GROUP BY skill_id""",
        "(skill, trials, successes) of the ``$split`` capsules routed to each skill."),
    NamedQuery("tampering_by_skill", """
        WITH hit AS (
          SELECT skill_id, round, capsule_id, exit_status,
                 row_number() OVER (PARTITION BY skill_id
                                    ORDER BY round, created_at, capsule_id) AS nth
          FROM capsule
          WHERE split = $split AND skill_id <> $none
          AND """ + _TAMPERED + """
          AND NOT contains(coalesce(grader_trace, ''), $screen_only))
        SELECT skill_id, count(*) AS capsules, min(round) AS first_round,
               max(round) AS last_round,
               max(capsule_id) FILTER (WHERE nth = 1) AS first_capsule,
               max(exit_status) FILTER (WHERE nth = 1) AS first_status
        FROM hit
        GROUP BY skill_id""",
        "(skill, capsules, first and last round, first capsule and status) of its routed "
        "``$split`` capsules graded as tampering."),
    NamedQuery("tampering_capsules", _FLAGGED + """
        WHERE """ + _TAMPERED + """
        ORDER BY round, split, task_id, capsule_id""",
        "Every capsule graded as tampering, with its route and the grader's trace."),
    NamedQuery("tampering_totals", """
        SELECT count(*) FILTER (WHERE split = 'train') AS train_tampering,
               count(*) FILTER (WHERE split = 'eval') AS eval_tampering
        FROM capsule
        WHERE """ + _TAMPERED,
        "(train, eval) capsules graded as tampering."),
    NamedQuery("suspicious_capsules", _FLAGGED + """
        WHERE grader_trace LIKE $pattern AND NOT coalesce(impossible, false)
        ORDER BY round, split, task_id, capsule_id""",
        "Every capsule whose trace matches ``$pattern`` (a screen's suspicion)."),
    NamedQuery("skills_retired_with", """
        SELECT count(DISTINCT skill_id) FROM skill_event
        WHERE event = 'retired' AND starts_with(coalesce(reason, ''), $prefix)""",
        "How many skills were retired with a reason starting ``$prefix``."),
    NamedQuery("pass_at_1_by_round", """
        SELECT round, split, count(*) AS total, count_if(passed) AS resolved,
               count_if(coalesce(infra_failure, false)) AS infra_failures
        FROM capsule GROUP BY round, split ORDER BY round, split""",
        "Per (round, split): capsules, resolved and infrastructure failures."),
    NamedQuery("recent_skill_events", """
        SELECT round, skill_id, event, status_after, contribution, trials, reason, created_at
        FROM skill_event ORDER BY created_at DESC, round DESC LIMIT $limit""",
        "The latest ``$limit`` skill events, newest first."),
    NamedQuery("failed_llm_calls", """
        SELECT role, count(*) AS failed, min(round) AS first_round, max(round) AS last_round,
               arg_max(error, round) AS last_error
        FROM llm_call WHERE NOT ok
        GROUP BY role ORDER BY failed DESC, role""",
        "Per role: failed LLM calls, over which rounds, and the latest error."),
    NamedQuery("registered_skill_ids", """
        SELECT DISTINCT skill_id FROM skill_event WHERE event <> 'rejected'""",
        "Ids that entered the bank (any skill event except a rejection)."),
    # ---- verdicts -----------------------------------------------------------------------------
    NamedQuery("verdicts_of_round", """
        SELECT count(*) FROM verdict WHERE round = $round""",
        "How many verdicts one round has."),
    NamedQuery("verdicts_between", """
        SELECT * FROM verdict WHERE round > $after AND round <= $last
        ORDER BY round, created_at, capsule_id""",
        "The verdicts of rounds ``$after + 1 .. $last``, in a stable order."),
    # ---- skill events -------------------------------------------------------------------------
    NamedQuery("skill_events", """
        SELECT round, skill_id, event, status_after, contribution, trials, reason, created_at
        FROM skill_event ORDER BY created_at, round, skill_id""",
        "Every skill event (meta-skills' too), in the order they happened."),
    NamedQuery("skill_status_changes", """
        SELECT skill_id, round, event, status_after FROM skill_event
        WHERE list_contains($events, event) AND coalesce(status_after, '') <> ''
        ORDER BY created_at, round""",
        "(skill, round, event, status) of the events in ``$events`` that set a status."),
    NamedQuery("skill_event_keys", """
        SELECT skill_id, created_at FROM skill_event""",
        "(skill, created_at) of every written skill event (a resumed writer's dedup key)."),
    NamedQuery("skill_events_since", """
        SELECT event, skill_id FROM skill_event WHERE round = $round AND created_at >= $since
        ORDER BY created_at, skill_id""",
        "(event, skill) of one round's events written at or after ``$since``."),
    NamedQuery("last_status_flips", """
        SELECT skill_id, arg_max(status_after, created_at), max(created_at) FROM skill_event
        WHERE event IN ('retired', 'evicted', 'restored', 'reinstated') AND status_after <> ''
        GROUP BY skill_id""",
        "(skill, status its last flip set, when) over retire/evict/restore/reinstate events."),
    NamedQuery("activation_rounds", """
        SELECT skill_id, max(round) FROM skill_event WHERE status_after = 'active'
        GROUP BY skill_id""",
        "(skill, the last round an event made it active)."),
    NamedQuery("routings_since_activation", """
        SELECT c.skill_id, count(*) FROM capsule c
        JOIN (SELECT skill_id, max(round) AS since FROM skill_event
              WHERE status_after = 'active' GROUP BY skill_id) a ON a.skill_id = c.skill_id
        WHERE c.round > a.since GROUP BY c.skill_id""",
        "(skill, capsules routed to it after the round it last became active)."),
    NamedQuery("probation_promotions", """
        SELECT skill_id, min(round) FILTER (WHERE earned >= $floor) AS promoted_round
        FROM (SELECT skill_id, round,
                     sum(count(*)) OVER (PARTITION BY skill_id ORDER BY round) AS earned
              FROM capsule
              WHERE split = 'train' AND skill_id <> $none AND NOT coalesce(infra_failure, false)
                AND NOT coalesce(impossible, false)
              GROUP BY skill_id, round)
        GROUP BY skill_id ORDER BY skill_id""",
        "(skill, the first round its train trials, counted as the Curator's c-hat counts them, "
        "reached ``$floor``; NULL: not yet): when an imported skill left probation."),
    # ---- what a run learned (``report.learned``) ----------------------------------------------
    NamedQuery("skills_added", """
        SELECT skill_id, min(round) AS round, max(sources) AS sources FROM skill_event
        WHERE event = 'added' GROUP BY skill_id ORDER BY round, skill_id""",
        "(skill, the round it entered the bank by ``added``, the failure verdicts it was drafted "
        "from or NULL) of every skill added during the run."),
    NamedQuery("routed_first_attempts", """
        SELECT skill_id, round, count(*) AS routed, count(*) FILTER (WHERE passed) AS passed
        FROM capsule
        WHERE coalesce(attempt, 0) = 0 AND NOT coalesce(impossible, false) AND skill_id <> $none
        GROUP BY ALL ORDER BY skill_id, round""",
        "Per (skill, round): first-attempt real capsules of both splits routed to the skill and "
        "how many passed (``$none``: the no-skill id, left out)."),
    # ---- SWE-bench validation (``ratchet swe validate``) --------------------------------------
    NamedQuery("validation_flake_rates", """
        SELECT instance_id,
               count(*) FILTER (WHERE patch = 'gold') AS gold_runs,
               count(*) FILTER (WHERE patch = 'gold' AND valid) AS gold_resolved,
               count(*) FILTER (WHERE patch = 'noop') AS noop_runs,
               count(*) FILTER (WHERE patch = 'noop' AND NOT valid) AS noop_bad,
               1 - (count(*) FILTER (WHERE patch = 'gold' AND valid))
                   / greatest(count(*) FILTER (WHERE patch = 'gold'), 1) AS gold_flake_rate,
               string_agg(DISTINCT image_digest, ',') AS image_digests
        FROM validation GROUP BY instance_id ORDER BY gold_flake_rate DESC, instance_id""",
        "Per instance of a validation: gold runs and how many resolved, no-op runs and how "
        "many were wrong, the gold patch's failure rate and the image digests graded."),
)

QUERIES: Mapping[str, NamedQuery] = {q.name: q for q in _QUERIES}
if len(QUERIES) != len(_QUERIES):
    raise ImportError("two named evidence queries share a name")


def _bound(name: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    query = QUERIES.get(name)
    if query is None:
        raise KeyError(f"no named evidence query {name!r}; known: {', '.join(sorted(QUERIES))}")
    if set(params) != query.params:
        raise KeyError(f"evidence query {name!r} takes parameters {sorted(query.params)}, "
                       f"got {sorted(params)}")
    return query.sql, dict(params)


def execute(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> duckdb.DuckDBPyConnection:
    """Run the query ``name`` with its named parameters on ``con``; returns the cursor."""
    sql, bound = _bound(name, params)
    return con.execute(sql, bound) if bound else con.execute(sql)


def fetch_all(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[tuple]:
    return execute(con, name, **params).fetchall()


def fetch_one(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> tuple:
    return execute(con, name, **params).fetchone()


def fetch_dicts(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[dict[str, Any]]:
    """Rows as ``{column: value}`` dicts, columns named as the query names them."""
    cursor = execute(con, name, **params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
