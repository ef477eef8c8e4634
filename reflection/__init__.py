"""L5 reflection: at session end the agent judges itself and proposes what to keep.

It runs as its own process (``thoth reflect SESSION_ID``); see DESIGN.md "Reflection".
"""
