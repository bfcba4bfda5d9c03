"""The LLM roles of the loop: one module per role, its prompt in ``<role>_prompt.py`` beside it.

==============  ==================================================  =============================
role module     what it holds                                       its prompt module
==============  ==================================================  =============================
``router``      ``Router``: one ACTIVE skill or NONE per task       ``router_prompt``
                (A1 no injection, A2 retrieval-only; the shortlist
                is ``retrieval.SkillIndex``: tf-idf top-K union
                embedding top-K)
``solver``      ``solve``: one attempt (code, or a suite's own      ``solver_prompt``
                turn); ``SolverWorker`` (route + solve), the plain
                class behind the Solver actor
``critic``      ``critique``: one Verdict per train-failure          ``critic_prompt``
                capsule; ``CriticWorker`` behind the Critic actor
``synthesizer`` ``Synthesizer``: verdict clusters -> new ACTIVE      ``synthesizer_prompt``
                skills (re-prompts: ``reprompt``, drafts:
                ``drafts``); ``SynthesizerWorker`` behind the
                Synthesizer actor
``refiner``     ``Reviser``: an ACTIVE skill's revision (A10)       ``refiner_prompt``
``metasynth``   ``refresh``: a new MetaSkill from recent verdicts   ``metasynth_prompt``
==============  ==================================================  =============================

``prompt_base`` holds what the prompts share (``STRUCTURED_CONFIG``, ``clip``, ``clip_tail``,
``task_text``). A role's built-in template, which a run's ``prompts.dir`` may
replace, is the ``*_TEMPLATE`` constant of its prompt module (the names and placeholders are
``ratchet_ray.settings.prompt_templates.TEMPLATES``); every prompt builder takes ``templates``
(keyword; the run's ``prompts.texts``). A worker builds its clients from ``config.llm``
(``llm.registry.make_llm``; the embedder lazily, ``LazyEmbedder``) unless one is injected (tests
inject ``tests/fakes.ScriptedLLM`` / ``HashEmbedder``); ``actors/<role>.py`` applies ``ray.remote``.

Elsewhere, by design: how a conversation becomes text for a base model is the LLM layer's
(``llm.prompting.completion_prompt``); a suite whose Solver is an agent writes that agent's
prompts in its own folder (``suites/swebench/agent/prompts.py``), and a suite's own Critic prompt
is a registry hook. All prompts are completion-style documents in ONE user message, so they work
on a base model (the local Gemma 3 270M has no chat template) and on chat models alike;
structured roles pass their pydantic model's JSON schema to the backend, which constrains
decoding where it can (llama.cpp grammars) and states the schema in the prompt.

Prompt API (other roles code against exactly these):
- ``solver_prompt.code_messages(task, skill, *, prefill="") -> list[Message]``;
  ``code_prefill(task)`` (the answer's opening fence + ``def <entry_point>(``, sent as a trailing
  assistant message to backends that declare ``supports_prefill``); ``CODE_STOP`` stop
  sequences (they never match an opening fence, only a closing one or what a base model writes
  after the function).
- ``Skill.guidance_text() -> str``: the 'Guidance' block injected into the Solver.
- ``router_prompt.router_messages(task, candidates)``; ``router_choice_model(candidate_ids) ->
  type[RouterChoice]`` (``skill_id`` is an enum of the candidate ids plus ``"NONE"``).
- ``critic_prompt.critic_messages(task, capsule, skill, *, prefill=False)`` (the task, then
  worked examples, the output and the grader's concrete finding, ``failure_summary(capsule)``,
  last; with ``prefill`` the part from the examples on is a trailing assistant message);
  ``verdict_model(skill_used: bool, *, entry_point="") -> type[VerdictOut]`` (no skill:
  attribution fixed to ``inapplicable``; ``pattern`` is 2-10 snake_case words,
  ``PATTERN_REGEX``, normalised from spaced/hyphenated text, and rejected when it names no
  concrete mistake, repeats itself or contains ``entry_point``: ``pattern_problem``);
  ``CONFIDENCE`` maps the confidence level to a float.
- ``synthesizer_prompt.synth_messages(suite, metaskill, pattern, examples, existing, feedback,
  *, prefill=False)`` (a whole draft); ``field_messages(...)`` / ``field_model(name)`` /
  ``assemble_draft(fields)`` (a fieldwise draft, ``FIELD_ORDER``); ``SkillDraft`` and
  ``schema_lock()`` are ``ratchet_ray.bank.skill_contract``'s; no prompt shows a worked example
  skill; ``copies_template(draft)`` detects copied schema placeholders.
- ``refiner_prompt.refine_messages(suite, metaskill, skill, examples, feedback, *, failures)``.
- ``metasynth_prompt.metasynth_messages(suite, current, pattern_counts, *, templates=None)``;
  ``MetaSkillDraft``.

This ``__init__`` imports nothing: a caller imports the role's module, so where a name is used
says where it is defined.
"""
