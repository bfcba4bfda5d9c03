"""The skill library: YAML skill files, Markdown meta-skills and the SkillBank that writes them."""
