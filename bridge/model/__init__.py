"""The language model: a small Protocol, the Anthropic implementation, and its wrappers."""
