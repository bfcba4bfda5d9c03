"""The prompts of every LLM role, one module per role (named like the role's module in
``ratchet_ray/roles/``), with the structured-output models their answers are validated against.

Where a role's prompt lives (its built-in template, which a run's ``prompts.dir`` may replace,
is the ``*_TEMPLATE`` constant of the same module; the template names and their placeholders are
``ratchet_ray.settings.prompt_templates.TEMPLATES``):

==================  =========================================================================
``solver``          ``code_messages``, ``code_prefill``, ``CODE_STOP``, ``SOLVER_TEMPLATE``
``router``          ``router_messages``, ``router_choice_model``, ``ROUTER_TEMPLATE``
``critic``          ``critic_messages`` (code and patch reviews), ``verdict_model``,
                    ``failure_summary``, ``CONFIDENCE``, ``CRITIC_TEMPLATE``,
                    ``PATCH_CRITIC_TEMPLATE``
``synthesizer``     ``synth_messages`` (a whole draft), ``field_messages`` / ``field_model`` /
                    ``assemble_draft`` (a fieldwise draft), ``SYNTH_TEMPLATE``
``refiner``         ``refine_messages`` (a skill's revision, ``synth.refine``)
``metasynth``       ``metasynth_messages``, ``MetaSkillDraft``, ``METASYNTH_TEMPLATE``
``base``            what they share: ``STRUCTURED_CONFIG``, ``clip``, ``clip_tail``,
                    ``task_text``, ``guidance_block``
==================  =========================================================================

Elsewhere, by design: how a conversation becomes text for a base model is the LLM layer's
(``ratchet_ray.llm.prompting.completion_prompt``); loading and checking template overrides is
the config's (``ratchet_ray.settings.prompt_templates``, which ``config`` imports, so it stays below the
roles); a suite whose Solver is an agent writes that agent's prompts in its own folder
(``ratchet_ray/suites/swebench/agent/prompts.py``), and a suite's own Critic prompt is a registry hook.

All prompts are completion-style documents in ONE user message, so they work on a base model
(the local Gemma 3 270M has no chat template; ``llm.prompting.completion_prompt`` turns the
messages into text sections ending in an open response) and on chat models alike. Structured
roles pass their pydantic model's JSON schema to the backend, which constrains decoding where it
can (llama.cpp grammars) and states the schema in the prompt.

API (other roles code against exactly these):
- Every builder takes ``templates`` (keyword; the run's ``prompts.texts``): a template named
  in ``ratchet_ray.settings.prompt_templates.TEMPLATES`` replaces the built-in one.
- ``solver.code_messages(task, skill, *, prefill="") -> list[Message]``; ``code_prefill(task)``
  (the answer's opening fence + ``def <entry_point>(``, sent as a trailing assistant message to
  backends that declare ``supports_prefill``); ``CODE_STOP`` stop sequences (they never match an
  opening fence, only a closing one or what a base model writes after the function).
- ``base.guidance_block(skill) -> str``: the 'Guidance' block injected into the Solver prompt.
- ``router.router_messages(task, candidates) -> list[Message]``;
  ``router_choice_model(candidate_ids) -> type[RouterChoice]`` (``skill_id`` is an enum of the
  candidate ids plus ``"NONE"``).
- ``critic.critic_messages(task, capsule, skill, *, prefill=False) -> list[Message]`` (the task,
  then worked examples, the output and the grader's concrete finding,
  ``failure_summary(capsule)``, last; with ``prefill`` the part from the examples on is a
  trailing assistant message); ``verdict_model(skill_used: bool, *, entry_point="") ->
  type[VerdictOut]`` (no skill: attribution fixed to ``inapplicable``; ``pattern`` is 2-10
  snake_case words, ``PATTERN_REGEX``, normalised from spaced/hyphenated text, and rejected
  when it names no concrete mistake, repeats itself or contains ``entry_point``:
  ``pattern_problem``); ``CONFIDENCE`` maps the confidence level to a float.
- ``synthesizer.synth_messages(suite, metaskill, pattern, examples, existing, feedback, *,
  prefill=False)`` (a whole draft); ``field_messages(...)`` / ``field_model(name)`` /
  ``assemble_draft(fields)`` (a fieldwise draft, ``FIELD_ORDER``); ``SkillDraft`` and
  ``schema_lock()`` are ``ratchet_ray.bank.skill_contract``'s (generated from ``types.Skill``); no
  prompt shows a worked example skill; ``copies_template(draft)`` detects copied schema
  placeholders.
- ``refiner.refine_messages(suite, metaskill, skill, examples, feedback, *, failures)``.
- ``metasynth.metasynth_messages(suite, current, pattern_counts, *, templates=None)``;
  ``MetaSkillDraft``.

The package's ``__init__`` imports nothing: a caller imports the role's module, so where a name
is used says where it is defined.
"""
