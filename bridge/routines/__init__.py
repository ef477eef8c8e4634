"""Routines: work Thoth does on a schedule (a digest, a reminder, a weekly look back),
each a turn as its creator in the place it posts to, run once whichever process is up.
"""
