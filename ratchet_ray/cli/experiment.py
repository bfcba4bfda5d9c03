"""``ratchet experiment run`` (the keep/revert loop) and ``ratchet experiment eval-skill-loop``
(the built-in frozen evaluator: the skill loop on a fixed subset and seeds, one contract line).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

import click

from ratchet_ray.cli.options import NumberRange, one_line
from ratchet_ray.run_config.options import dataset_path_option, llm_option, subset_option
from ratchet_ray.loop.entry import SUITE, check_startable
from ratchet_ray.settings.schema import default_suite


def _make_proposer(spec: str, llm: str, model: str | None, base_url: str | None,
                   temperature: float, max_tokens: int):
    from ratchet_ray.experiment.proposals import ProposalError, ScriptProposer

    if spec.startswith("script:"):
        with one_line(ProposalError, error=click.UsageError):
            return ScriptProposer(Path(spec[len("script:"):]))
    if spec != "llm":
        raise click.UsageError(f"--proposer {spec!r}: use llm or script:FILE")
    from ratchet_ray.settings.schema import LLMSettings
    from ratchet_ray.experiment.llm_proposer import LLMProposer
    from ratchet_ray.llm.registry import make_llm

    settings = LLMSettings(backend=llm, model=model, base_url=base_url)
    return LLMProposer(make_llm(settings), max_tokens=max_tokens, temperature=temperature)


@click.group("experiment", context_settings={"help_option_names": ["-h", "--help"]})
def experiment() -> None:
    """Keep/revert experiments against a frozen evaluator (see docs/experiment-loop.md)."""


@experiment.command("run")
@click.option("--repo", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Target git worktree (the experiment commits there, on experiment/<name>).")
@click.option("--editable", multiple=True, required=True, help="Glob a proposal may change (repeat).")
@click.option("--protected", multiple=True, help="Glob no proposal may change (repeat).")
@click.option("--evaluator", required=True, help="Shell command printing the contract JSON line.")
@click.option("--evaluator-path", "evaluator_paths", multiple=True,
              help="Evaluator file besides those its command names (hashed and frozen; repeat).")
@click.option("--name", default="default", show_default=True, help="Experiment name (branch).")
@click.option("--spec", help="Spec file in the repo (default program.md when present).")
@click.option("--max-iterations", type=click.IntRange(min=1), default=25, show_default=True,
              help="Proposals evaluated at most (resumes continue the count).")
@click.option("--budget-s", type=NumberRange(min=1), default=3600, show_default=True,
              help="Wall-clock budget of the whole run (resumes continue it).")
@click.option("--eval-timeout-s", type=NumberRange(min=1),
              help="Time limit of one evaluation (default: a quarter of --budget-s).")
@click.option("--eval-cost-usd", type=NumberRange(min=0), default=10.0, show_default=True,
              help="Cost limit of one evaluation: a contract whose metrics.cost_usd is over it "
                   "is a veto.")
@click.option("--review", multiple=True,
              help="Editable glob a human must review: a candidate changing it is never merged "
                   "(needs_review; repeat).")
@click.option("--noise-repeats", type=click.IntRange(min=0), default=2, show_default=True,
              help="Extra baseline evaluations that measure the noise margin when the "
                   "evaluator reports fewer than two per-seed scalars.")
@click.option("--patience", type=click.IntRange(min=0), default=10, show_default=True,
              help="Stop after this many iterations without a keep (0: never).")
@click.option("--noise-margin", type=NumberRange(min=0),
              help="Fixed improvement margin (default: from the evaluator's per-seed scalars).")
@click.option("--max-fix-attempts", type=click.IntRange(min=0), default=2, show_default=True,
              help="Follow-up fixes a crashed or timed-out candidate gets before `crash`.")
@click.option("--lower-is-better/--higher-is-better", default=None,
              help="Expected metric direction (default: the evaluator's).")
@click.option("--proposer", default="llm", show_default=True, help="llm or script:FILE.")
@llm_option("Backend of the llm proposer.", default="local", show_default=True)
@click.option("--llm-model", help="Model id (backend default when omitted).")
@click.option("--llm-base-url", help="Server URL for the openai backend.")
@click.option("--temperature", type=NumberRange(0, 2), default=0.0, show_default=True,
              help="Sampling temperature of the llm proposer.")
@click.option("--max-tokens", type=click.IntRange(min=16), default=400, show_default=True,
              help="Generation cap of one proposal of the llm proposer.")
def run(proposer, llm, llm_model, llm_base_url, temperature, max_tokens, **options) -> None:
    """Propose, evaluate, keep or revert, log: until the cap, the budget or a plateau."""
    from ratchet_ray.experiment.engine import ExperimentEngine, ExperimentError, ExperimentSettings
    from ratchet_ray.experiment.evaluator import EvaluatorChanged
    from ratchet_ray.experiment.gitops import GitError
    from ratchet_ray.experiment.ledger import LEDGER_FILE, LedgerError
    from ratchet_ray.experiment.paths import PolicyError
    from ratchet_ray.experiment.proposals import ProposerUnavailable

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    # The options' destinations are ExperimentSettings' fields (repeatable ones as lists).
    settings = ExperimentSettings(**{k: list(v) if isinstance(v, tuple) else v
                                     for k, v in options.items()})
    settings.patience = settings.patience or None  # --patience 0: never stop on a plateau
    chosen = _make_proposer(proposer, llm, llm_model, llm_base_url, temperature, max_tokens)
    with one_line(ExperimentError, EvaluatorChanged, GitError, LedgerError, PolicyError,
                  ProposerUnavailable, ValueError):
        report = ExperimentEngine(settings, chosen).run()
    for row in report.rows:
        scalar = "" if row.scalar is None else f" scalar={row.scalar:.6g}"
        click.echo(f"#{row.iteration} {row.status}{scalar} {row.note}".rstrip())
    best = "n/a" if report.best_scalar is None else f"{report.best_scalar:.6g}"
    click.echo(f"stopped: {report.stop_reason}; best {best} at {report.head[:10]} on "
               f"{report.branch}; ledger {Path(settings.repo) / LEDGER_FILE}")


def evaluator_sha() -> str:
    """Hash of the evaluator's own code (``experiment.evaluator.BUILTIN_CODE``: this module, the
    contract, manifest and scalar modules, ``ratchet_ray/metrics.py``), reported in its metrics;
    the engine pins the baseline's and vetoes a candidate that reports another."""
    from ratchet_ray.experiment.evaluator import builtin_code_files

    h = hashlib.sha256()
    for path in builtin_code_files():
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@experiment.command("eval-skill-loop")
@click.option("--suite", type=SUITE, default=default_suite(), show_default=True,
              help="Suite of the skill-loop runs (a registered suite).")
@subset_option("Fixed hard-subset file (jobs.select_subset).", required=True)
@click.option("--seeds", default="42,7,13", show_default=True, help="Comma-separated seeds.")
@click.option("--rounds", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rounds of each seed's run (fewer than the Curator and the rollback gate "
                   "need to act is said on stderr and in metrics.governance_inactive).")
@click.option("--config-overlay", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Candidate config YAML (knobs), applied over the Default.")
@click.option("--meta-skill", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Candidate meta-skill Markdown (like configs/meta_skills/default_mbpp.md).")
@click.option("--prompts-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Candidate role prompts: <template>.md files (solver, router, critic, "
                   "critic_patch, synthesizer, metasynth) replacing the built-in templates (prompts.dir).")
@click.option("--scalar", type=click.Choice(["rolling_gain", "final_pass"]), default="rolling_gain",
              show_default=True, help="The contract's scalar per seed: the run's rolling eval "
              "gain, or its last round's eval pass@1.")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Evaluator manifest YAML: the config keys a candidate's overlay may set "
                   "(allowed_keys), those a human must review (review_keys), the evaluator's "
                   "own settings and cost_budget_usd (default: the built-in manifest; keep the "
                   "file out of --editable so it is frozen).")
@click.option("--cost-budget-usd", type=NumberRange(min=0),
              help="Cost limit of this evaluation, all seeds (default: the manifest's, 10 USD): "
                   "each seed's run stops at its share and the candidate is vetoed.")
@click.option("--floor-tau", type=NumberRange(min=0, max=1), default=0.10, show_default=True,
              help="Proposition 1 floor: the retirement threshold tau.")
@click.option("--floor-n-min", type=click.IntRange(min=1), default=100, show_default=True,
              help="Proposition 1 floor: trials before retirement (N_min).")
@click.option("--floor-cap", type=click.IntRange(min=1), default=50, show_default=True,
              help="Proposition 1 floor: the active cap C.")
@click.option("--floor-delta", type=NumberRange(min=1e-12, max=1), default=1e-3,
              show_default=True, help="Proposition 1 floor: per-skill failure probability "
              "delta.")
@dataset_path_option()
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the run dirs here (default: a temporary folder, removed after).")
def eval_skill_loop(suite, subset, seeds, rounds, config_overlay, meta_skill, prompts_dir, scalar,
                    manifest, cost_budget_usd, floor_tau, floor_n_min, floor_cap, floor_delta,
                    dataset_path, results_dir) -> None:
    """Run the skill loop per seed with the candidate's config overlay, meta-skill and role
    prompts; print the contract line. An overlay key the manifest does not allow is a veto
    (printed at once, nothing runs); a safety-critical one marks the result needs_review."""
    from ratchet_ray.run_config.files import ConfigError
    from ratchet_ray.experiment.contract import REVIEW_KEY, EvalResult, format_contract
    from ratchet_ray.experiment.manifest import EvaluatorManifest, ManifestError
    from ratchet_ray.experiment.skill_eval import (REPEAT_ENV, FloorParams, governance_gaps,
                                                   repeat_seeds, skill_loop_contract,
                                                   yardstick_sha)

    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError as exc:
        raise click.UsageError(f"--seeds {seeds!r}: expected comma-separated integers") from exc
    if not seed_list:
        raise click.UsageError("--seeds: give at least one seed")
    with one_line(ManifestError, ValueError, error=click.UsageError):
        seed_list = repeat_seeds(seed_list, os.environ.get(REPEAT_ENV, ""))
        rules = EvaluatorManifest.load(manifest) if manifest else EvaluatorManifest()
    pinned = {"evaluator_sha": evaluator_sha(), "manifest_sha256": rules.sha256()}
    check = _check_overlay(config_overlay, rules)
    if check.vetoes:  # the yardstick is not the candidate's to move: nothing runs
        click.echo(format_contract(EvalResult(0.0, check.vetoes, {**pinned, "ran": False},
                                              seed_list, lower_is_better=False)))
        return
    budget = cost_budget_usd if cost_budget_usd is not None else rules.cost_budget_usd
    pins = [*rules.overrides(),
            *([f"budget.max_cost_usd={budget / len(seed_list)}"] if budget is not None else [])]
    if prompts_dir is not None:  # a bad template fails here, before Ray starts
        from ratchet_ray.settings.prompt_templates import PromptTemplateError, load_prompt_dir

        try:
            load_prompt_dir(prompts_dir)
        except PromptTemplateError as exc:
            raise click.UsageError(f"--prompts-dir: {exc}") from exc
    try:  # every seed's config, its backend and subset too, before Ray starts
        configs = []
        for seed in seed_list:
            configs.append(_seed_config(suite, subset, seed, rounds, config_overlay,
                                        prompts_dir, dataset_path, results_dir or Path("."),
                                        pins))
            check_startable(configs[-1])
        # What the yardstick resolves without the candidate (its knobs left out): a candidate
        # that changes one of its defaults reports another hash, and the engine vetoes it.
        pinned["evaluator_config_sha256"] = yardstick_sha(
            [_seed_config(suite, subset, s, rounds, None, None, dataset_path, Path("."), pins)
             for s in seed_list], rules.allowed_keys)
    except (ConfigError, ValueError) as exc:
        raise click.ClickException(f"seed {seed}: {exc}") from exc
    gaps = governance_gaps(configs[0])
    for gap in gaps:
        click.echo(f"warning: {gap}; raise --rounds for a scalar that measures governance",
                   err=True)
    from ratchet_ray.loop.session import ray_session

    with ray_session():  # one Ray for every seed (a run_loop inside leaves a connected Ray up)
        with tempfile.TemporaryDirectory(prefix="ratchet-eval-") as tmp:
            out_dir = results_dir or Path(tmp)
            runs, spent = {}, []
            for seed in seed_list:
                try:
                    runs[seed], stop = _run_seed(_seed_config(
                        suite, subset, seed, rounds, config_overlay, prompts_dir, dataset_path,
                        out_dir, pins), meta_skill)
                except (ConfigError, ValueError) as exc:
                    raise click.ClickException(f"seed {seed}: {exc}") from exc
                if stop:
                    spent.append(f"seed {seed}: stopped at its share of the ${budget:.4f} cost "
                                 f"budget ({stop})")
    result = skill_loop_contract(runs, scalar=scalar, cost_budget_usd=budget,
                                 floor=FloorParams(floor_tau, floor_n_min, floor_cap, floor_delta))
    result.vetoes.extend(spent)
    result.metrics.update(pinned)
    if gaps:
        result.metrics["governance_inactive"] = gaps
    if check.review:
        result.metrics[REVIEW_KEY] = check.review
    click.echo(format_contract(result))


def _check_overlay(overlay: Path | None, rules):
    """The manifest's verdict on the overlay's keys (a file that is not a mapping: usage error)."""
    from ratchet_ray.experiment.manifest import OverlayCheck
    from ratchet_ray.settings.schema import read_config_file

    if overlay is None:
        return OverlayCheck()
    try:
        data = read_config_file(Path(overlay))
    except ValueError as exc:  # unreadable, not UTF-8, not YAML or not a mapping: named
        raise click.UsageError(f"--config-overlay {exc}; an overlay is a mapping of config "
                               "keys, e.g. synth: {min_cluster_size: 2}") from exc
    return rules.check_overlay(data)


def _seed_config(suite, subset, seed, rounds, overlay, prompts_dir, dataset_path, out_dir,
                 pins=()):
    """The LoopConfig of one seed's run (``ConfigError`` when it is invalid): the candidate's
    overlay, then the evaluator's own settings (``pins``: the manifest's and the cost share)."""
    from ratchet_ray.run_config.files import load_config
    from ratchet_ray.run_config.flags import build_overrides

    overrides = build_overrides(suite, rounds=rounds, subset=subset, seed=seed,
                                tag=f"experiment-s{seed}", dataset_path=dataset_path)
    if prompts_dir is not None:  # recorded in the run's config.yaml with the files' digest
        overrides.append(f"prompts.dir={json.dumps(str(Path(prompts_dir).resolve()))}")
    return load_config([overlay] if overlay else [],
                       [*overrides, *pins,
                        f"results_dir={json.dumps(str(Path(out_dir).resolve()))}"])


def _run_seed(config, meta_skill) -> tuple[list, str]:
    """The ``loop.json`` rounds of one seed's run of ``config`` (``_seed_config``), and why its
    cost budget stopped it ('' when it did not)."""
    from ratchet_ray.bank.metaskills import default_metaskill, dump_metaskill
    from ratchet_ray.loop.budget import BudgetExhausted
    from ratchet_ray.loop.driver import open_run, run_loop

    suite = config.suite
    run, config, _, _ = open_run(config, None)  # creates the run dir, holding its writer lock
    try:
        if meta_skill is not None:
            # The candidate's authoring prior replaces the shipped default: the bank loads every
            # meta-skill in the run dir and only copies the default in when the suite has none.
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / f"default_{suite}.md").write_text(Path(meta_skill).read_text())
                meta = default_metaskill(suite, Path(tmp)).model_copy(
                    update={"id": f"candidate_{suite}"})
            (run.path / "meta-skills").mkdir(exist_ok=True)
            (run.path / "meta-skills" / f"{meta.id}.md").write_text(dump_metaskill(meta))
    finally:
        run.release()  # run_loop takes the lock again to run it
    try:
        path = run_loop(None, resume=run.path, show_progress=False)
    except BudgetExhausted as exc:  # the rounds it finished count; the veto says why it stopped
        return json.loads((run.path / "loop.json").read_text())["rounds"], str(exc)
    return json.loads((path / "loop.json").read_text())["rounds"], ""


COMMANDS = [experiment]
