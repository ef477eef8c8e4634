"""L2 identity memory: who each person is, from Honcho or the built-in local backend."""
