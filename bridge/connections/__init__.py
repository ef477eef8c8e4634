"""Each person's own account on a remote MCP server: the client side of MCP's
authorization (OAuth 2.1 with PKCE), tokens kept sealed per (workspace, person, server).
"""
