"""L4 procedural memory: the persona stack (and, with the brain repo, skills)."""
