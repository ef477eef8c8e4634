"""The memory layers: working, identity, episodic, procedural (reflection lives apart)."""
