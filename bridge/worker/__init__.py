"""`thoth worker`: the background work, claimed from the database's queues."""
