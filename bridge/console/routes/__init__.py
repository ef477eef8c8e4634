"""The console's routes, a module a page, named as the page's logic in ``pages/`` is: a
reader looking for how /notes answers opens ``routes/notes.py``. Each module declares its
routes with the guard they need (``guard.py``); ``web_app.py`` lists the modules, so a new
page is a routes module, its template and its test."""
