"""Memory notes as governed records: what the team asked Thoth to keep, where it was said,
who asked and who decided (DESIGN.md "Governance")."""
