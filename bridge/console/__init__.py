"""The memory console: what Thoth keeps, seen and governed in a browser (`thoth console`,
and /console under `thoth serve` in HTTP mode).

Server-rendered (Starlette and Jinja2, autoescaped), no JavaScript. Who signs in sees
what the visibility rule lets them read; the operator, signed in through the one-time
link printed at start, sees everything. Every change is written to the audit log
(``layers/shared/audit``) with who, when and from where.
"""
