"""The skill library: the one skill contract (the draft model and schema lock the Synthesizer and
the meta-skills share), YAML skill files, Markdown meta-skills and the SkillBank that writes them."""
