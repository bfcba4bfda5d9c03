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

Each prompt module states its builders' contract; ``prompt_base`` holds what they share
(``STRUCTURED_CONFIG``, ``clip``, ``clip_tail``, ``task_text``), and the Solver's injected block
is ``Skill.guidance_text``. A role's built-in template, which a run's ``prompts.dir`` may
replace, is the ``*_TEMPLATE`` constant of its prompt module (names and placeholders:
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

This ``__init__`` imports nothing: a caller imports the role's module, so where a name is used
says where it is defined.
"""
