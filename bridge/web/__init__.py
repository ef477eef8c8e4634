"""Serving HTTP: the one web server every surface's routes are mounted on, and what each
response carries."""
