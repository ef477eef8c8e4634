"""`thoth` subcommands, one module per noun."""
