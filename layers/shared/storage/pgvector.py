"""pgvector's indexes as PostgreSQL lists them, for whoever handles them: `thoth migrate`
builds them once after its copy, `thoth doctor` weighs their size against memory.
(A module of its own, without psycopg, so that SQLite's commands never import it.)"""

# pgvector's HNSW indexes in the current schema: (name, CREATE INDEX statement, bytes).
HNSW_INDEXES = (
    "SELECT c.relname, pg_get_indexdef(c.oid), pg_relation_size(c.oid) FROM pg_class c"
    " JOIN pg_am a ON a.oid = c.relam"
    " WHERE a.amname = 'hnsw' AND c.relnamespace = current_schema()::regnamespace"
)
