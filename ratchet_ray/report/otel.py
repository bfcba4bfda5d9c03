"""Optional OpenTelemetry traces of a run over OTLP/HTTP (the ``otel`` extra), with the GenAI
semantic conventions' attributes: one trace per run, spans ``ratchet.run`` > ``ratchet.round``
> ``invoke_agent <role>`` > ``chat <model>`` (the span table: docs/report.md, "OpenTelemetry
traces").

Why the driver makes the spans after each round from the ``llm_call`` evidence, not a tracer in
each worker: docs/report.md, "Where the spans are made".

Contracts:
- Off by default, and then nothing of OpenTelemetry is imported: ``start_tracing(config,
  run_dir)`` returns the no-op ``Tracker`` unless ``tracing.otlp_endpoint`` (or
  ``$RATCHET_OTLP_ENDPOINT``; the setting wins) is set.
- ``OtelTracer`` has its own ``TracerProvider`` (none set process-wide), a batch processor and
  the OTLP/HTTP exporter (``tracing.timeout_s`` per export); ``round_done(summary)`` emits the
  round's spans; ``close`` ends the run span and flushes within ``tracing.timeout_s``. It never
  fails the run: any error is one WARNING line and the tracer stops.
- ``tracing_problems(config, env)`` names ``pip install 'ratchet-ray[otel]'`` when it is missing.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Mapping

from ratchet_ray.report.tracking import Tracker, installed, start_guarded

log = logging.getLogger(__name__)
ENV_ENDPOINT = "RATCHET_OTLP_ENDPOINT"
SCOPE = "ratchet_ray"


def resolve_endpoint(config: Any, env: Mapping[str, str] | None = None) -> str | None:
    """The OTLP/HTTP traces endpoint (the setting, else ``$RATCHET_OTLP_ENDPOINT``), or None."""
    env = os.environ if env is None else env
    return config.tracing.otlp_endpoint or env.get(ENV_ENDPOINT) or None


def tracing_problems(config: Any, env: Mapping[str, str] | None = None) -> list[str]:
    """What keeps tracing from working, one line each with the fix; empty when off."""
    endpoint = resolve_endpoint(config, env)
    if endpoint is None:
        return []
    missing = [m for m in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
               if not installed(m)]
    if missing:
        return [f"tracing.otlp_endpoint is {endpoint} but {', '.join(missing)} is not installed: "
                "pip install 'ratchet-ray[otel]'"]
    if not endpoint.startswith(("http://", "https://")):
        return [f"tracing.otlp_endpoint {endpoint!r} is not an http(s) URL; pass e.g. "
                "http://127.0.0.1:4318/v1/traces (OTLP over HTTP)"]
    return []


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


class OtelTracer(Tracker):
    """Spans of a run from its evidence (module contracts)."""

    def __init__(self, config: Any, run_dir: Path, endpoint: str):
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.trace = trace
        self.run_dir, self.config = Path(run_dir), config
        self.timeout_s = config.tracing.timeout_s
        self.provider = TracerProvider(resource=Resource.create({
            "service.name": config.tracing.service_name, "ratchet.run_id": self.run_dir.name,
            "ratchet.suite": config.suite}))
        self.provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=endpoint, timeout=self.timeout_s)))
        self.tracer = self.provider.get_tracer(SCOPE)
        self.run_span = self.tracer.start_span(f"ratchet.run {self.run_dir.name}", attributes={
            "ratchet.run_id": self.run_dir.name, "ratchet.suite": config.suite,
            "ratchet.arm": config.arm or "default", "ratchet.seed": config.seed,
            "ratchet.rounds_planned": config.rounds, "gen_ai.provider.name": config.llm.backend,
            **({"gen_ai.request.model": config.llm.model} if config.llm.model else {})})
        self.totals = {"input": 0, "output": 0, "cost": 0.0}
        self.failed = False

    def round_done(self, summary: Any) -> None:
        if self.failed:
            return
        try:
            self._round(summary)
        except Exception as exc:  # noqa: BLE001 - tracing never fails the run
            self.failed = True
            log.warning("OpenTelemetry tracing stopped: %s: %s", type(exc).__name__, exc)

    def _round(self, summary: Any) -> None:
        from ratchet_ray.evidence import named_queries as nq
        from ratchet_ray.evidence.store import EvidenceStore

        store = EvidenceStore(self.run_dir)
        calls = []
        if store.part_paths("llm_call"):
            with store.connect() as con:
                calls = nq.fetch_dicts(con, "llm_calls_of_round", round=summary.round)
        end = time.time()
        begin = min([end - summary.wall_s] + [c["created_at"] - (c["latency_s"] or 0.0)
                                              for c in calls if c["created_at"]])
        attrs = {"ratchet.round": summary.round, "ratchet.wall_s": summary.wall_s,
                 "gen_ai.usage.input_tokens": summary.input_tokens,
                 "gen_ai.usage.output_tokens": summary.output_tokens,
                 "ratchet.cost_usd": summary.cost_usd, "ratchet.rollback_fired": summary.rollback_fired,
                 "ratchet.active_skills": summary.active_skills,
                 **{f"ratchet.{split}.pass_at_1": getattr(summary, split).pass_at_1
                    for split in ("eval", "train") if getattr(summary, split) is not None}}
        round_span = self.tracer.start_span(
            f"ratchet.round {summary.round}", context=self.trace.set_span_in_context(self.run_span),
            start_time=_ns(begin), attributes=attrs)
        by_role: dict[str, list[dict]] = {}
        for call in calls:
            by_role.setdefault(call["role"], []).append(call)
        for role, rows in sorted(by_role.items()):
            self._role(round_span, role, rows, end)
        round_span.end(end_time=_ns(end))

    def _role(self, round_span, role: str, rows: list[dict], fallback: float) -> None:
        times = [(c["created_at"] or fallback) for c in rows]
        starts = [t - (c["latency_s"] or 0.0) for t, c in zip(times, rows)]
        tokens_in = sum(c["input_tokens"] or 0 for c in rows)
        tokens_out = sum(c["output_tokens"] or 0 for c in rows)
        cost = sum(c["cost_usd"] or 0.0 for c in rows)
        self.totals["input"] += tokens_in
        self.totals["output"] += tokens_out
        self.totals["cost"] += cost
        span = self.tracer.start_span(
            f"invoke_agent {role}", context=self.trace.set_span_in_context(round_span),
            start_time=_ns(min(starts)),
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": role,
                        "gen_ai.usage.input_tokens": tokens_in,
                        "gen_ai.usage.output_tokens": tokens_out, "ratchet.cost_usd": cost,
                        "ratchet.llm_calls": len(rows)})
        for call, start, stop in zip(rows, starts, times):
            self._call(span, call, start, stop)
        span.end(end_time=_ns(max(times)))

    def _call(self, parent, call: dict, start: float, stop: float) -> None:
        model = call["model"] or "unknown"
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                 "gen_ai.provider.name": call["backend"] or "unknown",
                 "gen_ai.usage.input_tokens": call["input_tokens"] or 0,
                 "gen_ai.usage.output_tokens": call["output_tokens"] or 0,
                 "ratchet.cost_usd": call["cost_usd"] or 0.0, "ratchet.role": call["role"],
                 "ratchet.cached": bool(call["cached"]), "ratchet.retries": call["retries"] or 0}
        if call["ok"] is False:
            attrs["error.type"] = (call["error"] or "error")[:200]
        span = self.tracer.start_span(f"chat {model}",
                                      context=self.trace.set_span_in_context(parent),
                                      start_time=_ns(start), attributes=attrs)
        if call["ok"] is False:
            span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, attrs["error.type"]))
        span.end(end_time=_ns(stop))

    def close(self, finished: bool) -> None:
        try:
            self.run_span.set_attributes({
                "ratchet.finished": finished, "gen_ai.usage.input_tokens": self.totals["input"],
                "gen_ai.usage.output_tokens": self.totals["output"],
                "ratchet.cost_usd": self.totals["cost"]})
            self.run_span.end()
            if not self.provider.force_flush(timeout_millis=int(self.timeout_s * 1000)):
                log.warning("OpenTelemetry: spans not all exported within %.0f s",
                            self.timeout_s)
            self.provider.shutdown()
        except Exception as exc:  # noqa: BLE001 - tracing never fails the run
            log.warning("OpenTelemetry tracing could not finish: %s: %s", type(exc).__name__, exc)


def start_tracing(config: Any, run_dir: Path) -> Tracker:
    """The run's tracer (module contracts); never raises."""
    return start_guarded("OpenTelemetry tracing", lambda: resolve_endpoint(config),
                         lambda endpoint: OtelTracer(config, run_dir, endpoint))
