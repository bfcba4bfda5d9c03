"""Optional MLflow tracking of a run: params, per-round metrics, the report and the skill YAMLs
(what is logged, and how to view it: docs/report.md, "MLflow tracking").

Contracts:
- Off by default; on when ``tracking.enabled``, ``tracking.mlflow_uri`` or
  ``$RATCHET_MLFLOW_URI`` is set (the setting wins). Without a URI the store is
  ``sqlite:///<results_dir>/mlflow.db``; a ``file:`` URI is accepted.
- ``start_tracking(config, run_dir)``: the no-op ``Tracker`` when off, else an ``MlflowTracker``
  whose MLflow calls all run on its own daemon thread (the driver only enqueues a durable
  round), so tracking neither fails nor slows the loop. A failure is one WARNING line and the
  tracker stops; requests use ``tracking.timeout_s`` and one retry; ``close(finished)`` waits
  at most ``2 x tracking.timeout_s`` and never raises.
- ``tracking_problems(config, env)``: what the entry points check before a run, one line each
  naming the URI's source and the fix; empty when off.
- One MLflow run per run dir, its id in ``<run_dir>/mlflow_run.json`` (a resume logs into it); a
  sweep's run (``<sweep>/sweep.json`` above it) is nested under one parent run, found by its
  ``ratchet.sweep`` tag or created under a lock file in the sweep folder.
- Params: the resolved config as dotted keys; metrics per round (step = round) from the round
  summary and its ``llm_call`` evidence; artifacts ``skills/``, ``meta-skills/`` and, at
  ``close``, ``report.html``.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from ratchet_ray.evidence.schema import round_record
from ratchet_ray.experiment.manifest import flatten as dotted_keys
from ratchet_ray.llm.requirements import installed  # without importing it (MLflow takes seconds)

log = logging.getLogger(__name__)
ENV_URI = "RATCHET_MLFLOW_URI"
RUN_FILE = "mlflow_run.json"
SWEEP_FILE = "sweep.json"
SWEEP_LOCK = ".mlflow_parent.lock"
PARAM_LIMIT = 500
ROUND_METRICS = ("eval_pass_at_1", "train_pass_at_1", "active_skills", "deprecated_skills",
                 "input_tokens", "output_tokens", "cost_usd", "wall_s")


def resolve_uri(config: Any) -> str | None:
    """The tracking URI of ``config`` (module contracts), or None when tracking is off."""
    uri = config.tracking.mlflow_uri or os.environ.get(ENV_URI) or None
    if uri is None and config.tracking.enabled:
        return f"sqlite:///{Path(config.results_dir).resolve() / 'mlflow.db'}"
    return uri


KNOWN_SCHEMES = ("http", "https", "file", "sqlite", "postgresql", "mysql", "mssql", "databricks",
                 "databricks-uc")
"""URI schemes MLflow keeps runs in (a database scheme may carry a driver: ``mysql+pymysql``)."""


def tracking_problems(config: Any, env: Mapping[str, str] | None = None) -> list[str]:
    """Why tracking as ``config`` asks for it cannot work here (module contracts); [] if it can."""
    from ratchet_ray.redact import redact_url

    env = os.environ if env is None else env
    settings = config.tracking
    uri = settings.mlflow_uri or env.get(ENV_URI) or None
    if uri is None and not settings.enabled:
        return []
    source = ("tracking.mlflow_uri" if settings.mlflow_uri
              else f"${ENV_URI}" if env.get(ENV_URI) else "tracking.enabled")
    off = ("unset tracking.mlflow_uri and $RATCHET_MLFLOW_URI" if source != "tracking.enabled"
           else "--set tracking.enabled=false")
    if not installed("mlflow"):
        return [f"{source}: MLflow tracking needs the package mlflow, which is not installed; "
                f"fix: pip install 'ratchet-ray[tracking]', or {off}"]
    if uri is None:  # the default local store, made under results_dir with the run
        return []
    shown = redact_url(uri)
    parts = urlsplit(uri)
    scheme = (parts.scheme or uri).split("+", 1)[0].lower()  # "databricks" alone is a URI
    if scheme not in KNOWN_SCHEMES or (scheme in ("http", "https") and not parts.hostname):
        return [f"{source}={shown} is not a tracking URI MLflow knows; fix: give "
                "http://HOST:PORT (an `mlflow server`), sqlite:///PATH/mlflow.db or "
                f"file:///FOLDER, or {off}"]
    if scheme in ("http", "https"):
        return _server_problems(uri, shown, source, off, float(settings.timeout_s))
    if scheme == "sqlite":
        # sqlite:///rel/x.db is relative to the working dir, sqlite:////abs/x.db absolute.
        folder = Path(uri.split("://", 1)[1].removeprefix("/")).expanduser().parent
        if not folder.is_dir():
            return [f"{source}={shown}: the folder {folder} of the database file does not "
                    f"exist; fix: create it (mkdir -p {folder}), or {off}"]
    return []


def _server_problems(uri: str, shown: str, source: str, off: str, timeout_s: float) -> list[str]:
    """An MLflow server at ``uri`` that does not answer (any HTTP reply is an answer)."""
    import urllib.error
    import urllib.request

    parts = urlsplit(uri)
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    probe = f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}/health"
    try:
        with urllib.request.urlopen(probe, timeout=timeout_s):
            return []
    except urllib.error.HTTPError:  # it answered (a login page, a proxy's 404): reachable
        return []
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return [f"{source}={shown}: no MLflow server answers there within {timeout_s:g}s "
                f"({reason}); fix: start one (mlflow server --host 127.0.0.1 --port 5000) or "
                f"correct the URI, or {off}"]


def flatten(data: dict[str, Any]) -> dict[str, str]:
    """Dotted keys -> string values (lists and empty dicts as JSON), each cut to PARAM_LIMIT."""
    return {key: (value if isinstance(value, str) else json.dumps(value, default=str))[:PARAM_LIMIT]
            for key, value in dotted_keys(data).items()}


def sweep_dir_of(run_dir: Path) -> Path | None:
    """The sweep folder a run dir belongs to (``jobs.ablations`` layout), or None."""
    parents = Path(run_dir).resolve().parents
    if len(parents) > 3 and parents[2].name == "runs" and (parents[3] / SWEEP_FILE).is_file():
        return parents[3]
    return None


class Tracker:
    """What the driver calls; the base class does nothing (tracking off)."""

    def round_done(self, summary: Any) -> None:
        """A round is durable (evidence, summary.json, loop.json): log it."""

    def close(self, finished: bool) -> None:
        """The run ended (``finished``: every planned round done)."""


class Trackers(Tracker):
    """Several trackers as one (MLflow tracking and OpenTelemetry tracing, ``report.otel``): each
    is told every round and the close, in order; none of them raises."""

    def __init__(self, *trackers: Tracker):
        self.trackers = trackers

    def round_done(self, summary: Any) -> None:
        for tracker in self.trackers:
            tracker.round_done(summary)

    def close(self, finished: bool) -> None:
        for tracker in self.trackers:
            tracker.close(finished)


class MlflowTracker(Tracker):
    """Logs to MLflow from a daemon thread (module contracts)."""

    def __init__(self, config: Any, run_dir: Path, uri: str):
        self.config, self.run_dir, self.uri = config, Path(run_dir), uri
        self.timeout_s = float(config.tracking.timeout_s)
        self.client: Any = None
        self.run_id: str | None = None
        self.failed = False
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self.thread = threading.Thread(target=self._work, name="ratchet-mlflow", daemon=True)
        self.thread.start()
        self._submit(self._open)

    # ---- the worker thread ---------------------------------------------------------------
    def _submit(self, job: Callable[[], None]) -> None:
        if not self.failed:
            self.jobs.put(job)

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                if job is None:
                    return
                if not self.failed:
                    job()
            except Exception as exc:  # noqa: BLE001 - tracking never fails the run
                self.failed = True
                log.warning("MLflow tracking to %s failed, no more tracking for this run: "
                            "%s: %s", self.uri, type(exc).__name__, str(exc)[:300])
            finally:
                self.jobs.task_done()

    def _open(self) -> None:
        if self.uri.startswith(("http://", "https://")):
            # Bounded requests: a dead server costs seconds, not MLflow's default minutes.
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(1, int(self.timeout_s))))
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
        if self.uri.startswith("file:"):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # asked for by name
        from mlflow import MlflowClient

        self.client = MlflowClient(tracking_uri=self.uri)
        experiment = self._experiment()
        saved = self.run_dir / RUN_FILE
        if saved.is_file():
            self.run_id = json.loads(saved.read_text())["run_id"]
            self.client.update_run(self.run_id, status="RUNNING")
            return
        tags = {"ratchet.run_dir": str(self.run_dir.resolve()), "ratchet.kind": "run",
                "ratchet.suite": str(self.config.suite), "ratchet.arm": str(self.config.arm),
                "ratchet.seed": str(self.config.seed)}
        sweep = sweep_dir_of(self.run_dir)
        if sweep is not None:
            tags["mlflow.parentRunId"] = self._sweep_parent(experiment, sweep)
            tags["ratchet.sweep"] = str(sweep)
        run = self.client.create_run(experiment, run_name=self.run_dir.name, tags=tags)
        self.run_id = run.info.run_id
        from ratchet_ray.storage.fsutil import atomic_write_json

        atomic_write_json(saved, {"run_id": self.run_id, "tracking_uri": self.uri,
                                  "experiment_id": experiment})
        from mlflow.entities import Param

        params = flatten(self.config.model_dump(mode="json"))
        items = [Param(k, v) for k, v in sorted(params.items())]
        for i in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[i:i + 100])

    def _experiment(self) -> str:
        name = self.config.tracking.experiment or f"ratchet-{self.config.suite}"
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        location = None
        if self.uri.startswith("sqlite:"):
            location = (Path(self.uri.removeprefix("sqlite:///")).parent / "mlartifacts").as_uri()
        try:
            return self.client.create_experiment(name, artifact_location=location)
        except Exception:  # noqa: BLE001 - a parallel arm created it first
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def _sweep_parent(self, experiment: str, sweep: Path) -> str:
        import fcntl

        with open(sweep / SWEEP_LOCK, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            query = f"tags.`ratchet.sweep` = '{sweep}' and tags.`ratchet.kind` = 'sweep'"
            runs = self.client.search_runs([experiment], filter_string=query, max_results=1)
            if runs:
                return runs[0].info.run_id
            run = self.client.create_run(experiment, run_name=f"sweep {sweep.name}", tags={
                "ratchet.sweep": str(sweep), "ratchet.kind": "sweep"})
            return run.info.run_id

    def _log_round(self, row: dict[str, Any]) -> None:
        from mlflow.entities import Metric

        from ratchet_ray.evidence import named_queries as nq
        from ratchet_ray.evidence.store import EvidenceStore

        step, now = int(row["round"]), int(time.time() * 1000)
        values: dict[str, float] = {k: float(row[k]) for k in ROUND_METRICS
                                    if row.get(k) is not None}
        values["tokens"] = float((row.get("input_tokens") or 0) + (row.get("output_tokens") or 0))
        values["rollback_fired"] = float(bool(row.get("rollback_fired")))
        for key in ("skills_created", "skills_retired", "skills_evicted"):
            values[key] = float(len(row.get(key) or []))
        with EvidenceStore(self.run_dir).connect() as con:
            per_role = nq.fetch_all(con, "llm_spend_by_role_of_round", round=step)
        for role, tokens, cost in per_role:
            values[f"tokens_{role}"], values[f"cost_usd_{role}"] = float(tokens), float(cost)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step)
                                                    for k, v in sorted(values.items())])
        self._log_bank()

    def _log_bank(self) -> None:
        for folder in ("skills", "meta-skills"):
            path = self.run_dir / folder
            if path.is_dir() and any(path.iterdir()):
                self.client.log_artifacts(self.run_id, str(path), artifact_path=folder)

    def _finish(self, finished: bool) -> None:
        import tempfile

        from ratchet_ray.report.html import build_report

        with tempfile.TemporaryDirectory() as tmp:
            page = build_report([self.run_dir], Path(tmp) / "report.html")
            self.client.log_artifact(self.run_id, str(page))
        self._log_bank()
        self.client.set_terminated(self.run_id, status="FINISHED" if finished else "KILLED")

    # ---- the driver's side ---------------------------------------------------------------
    def round_done(self, summary: Any) -> None:
        row = round_record(summary)
        self._submit(lambda: self._log_round(row))

    def close(self, finished: bool) -> None:
        try:
            self._submit(lambda: self._finish(finished))
            self.jobs.put(None)
            # The report takes seconds on a long run: it gets its own share of the wait.
            self.thread.join(timeout=self.timeout_s * 2)
            if self.thread.is_alive():
                log.warning("MLflow tracking to %s did not finish within %.0f s; the run goes "
                            "on without waiting (what was sent is kept)", self.uri,
                            self.timeout_s * 2)
        except Exception as exc:  # noqa: BLE001 - tracking never fails the run
            log.warning("MLflow tracking close failed: %s", exc)


def start_tracking(config: Any, run_dir: Path) -> Tracker:
    """The run's tracker (module contracts); never raises."""
    return start_guarded("MLflow tracking", lambda: resolve_uri(config),
                         lambda uri: MlflowTracker(config, run_dir, uri))


def start_guarded(what: str, where: Callable[[], str | None],
                  build: Callable[[str], Tracker]) -> Tracker:
    """``build(where())``, or the no-op tracker when ``where()`` is None (off) or either raises
    (one WARNING naming ``what``): a tracker never fails the run."""
    try:
        target = where()
        if target is None:
            return Tracker()
        return build(target)
    except Exception as exc:  # noqa: BLE001 - tracking never fails the run
        log.warning("%s could not start: %s", what, exc)
        return Tracker()
