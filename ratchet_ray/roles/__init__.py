"""The LLM roles of the loop: one module per role, holding its logic and its worker (a plain
class; ``actors/<role>.py`` applies ``ray.remote``), its prompt builders in ``<role>_prompt.py``.

A role's built-in template, which a run's ``prompts.dir`` may replace, is its prompt module's
``*_TEMPLATE`` (``settings.prompt_templates.TEMPLATES``); every prompt builder takes
``templates`` (the run's ``prompts.texts``); ``prompt_base`` holds what they share. A worker
builds its clients from ``config.llm`` (``llm.registry.make_llm``, ``LazyEmbedder``) unless one is
injected. Every prompt is a completion-style document in ONE user message, so it works on a base
model (no chat template) and chat models alike; structured roles pass their pydantic model's JSON
schema to the backend. Turning a conversation into base-model text is ``llm.local``'s; an
agent suite writes its agent's prompts in its own folder; a suite's own Critic prompt is a hook.

This ``__init__`` imports nothing: where a name is used says where it is defined.
"""
