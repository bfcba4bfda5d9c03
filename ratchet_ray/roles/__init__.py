"""The LLM roles of the loop, each a small function or class over an injected LLM client.

- ``prompts``: each role's prompt builder and structured-output model, one module per role
  (``prompts.solver``, ``prompts.critic``, ...; the package's docstring maps them).
- ``retrieval.SkillIndex``: tf-idf top-K union embedding top-K (faiss) shortlist.
- ``router.Router``: one ACTIVE skill or NONE per task (A1 no injection, A2 retrieval-only).
- ``solver.solve``: one attempt (code for MBPP+, a patch via the SWE-bench agent).
- ``critic.critique``: one Verdict per train-failure capsule.
- ``synthesizer.Synthesizer``: verdict clusters -> new ACTIVE skills, dedup re-prompts.
- ``metasynth.refresh``: a new MetaSkill from recent verdicts (its own cadence).
- ``workers``: the plain classes behind the Solver / Critic / Synthesizer actors.
"""
