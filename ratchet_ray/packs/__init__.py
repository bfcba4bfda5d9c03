"""Skill packs: a run's bank exported with its evidence, imported on probation elsewhere (docs/skill-packs.md)."""
