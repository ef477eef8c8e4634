"""L3 episodic memory: what we did, one episode per successful turn."""
