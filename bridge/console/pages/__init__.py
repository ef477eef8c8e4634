"""One module a page: what it reads and what it may change, with no HTTP in it; the
page's routes (``routes/``, under the same name) guard it and fill its template."""
