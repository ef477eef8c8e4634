"""Files people share with Thoth (a Slack message's files, `thoth chat`'s /attach): read
into what the model is shown and what memory keeps (``reading.py``)."""
