"""`thoth tools list`: the team's MCP servers (mcp.json), where each may be used, and each
tool with how it is approved."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.team_tools.config import ServerEntry, TeamToolsConfig, tool_name
from bridge.team_tools.probe import (
    Offered,
    Probe,
    SignsPeopleIn,
    Unreachable,
    entries_as_written,
    probed,
    refused_fix,
    transport,
    transport_line,
)
from layers.shared.errors import ConfigurationError

RUNS = "runs without asking (readOnly)"
ASKS = "asked of a person first"
SHAPE = ('{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}}}} for stdio,'
         ' {"type": "http", "url": "...", "headers": {...}} for HTTP')


def register(commands: Any) -> None:
    parser = commands.add_parser("tools", help="the team's MCP servers and their tools")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    listing = actions.add_parser(
        "list", help="every server of mcp.json, where it may be used, each tool and how it"
                     " is approved")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=run_list)


def run_list(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    path = app.settings.mcp_config_path
    if app.team_tools_problem:
        raise ConfigurationError(f"{app.team_tools_problem}: fix it (the team's MCP servers"
                                 " are not used until it reads)")
    if app.team_tools is None:
        if args.json:
            print(json.dumps({"config": str(path), "exists": path.exists(), "servers": []}),
                  file=out)
        else:
            print(f"no team tools: put the servers in {path} (or name a file with"
                  f" MCP_CONFIG), {SHAPE}", file=out)
        return 0
    config = app.team_tools.config
    found = probed(config, logs=app.settings.thoth_home / "logs")
    servers = [_server(name, written, config, found)
               for name, written in _in_file_order(path, config).items()]
    if args.json:
        print(json.dumps({"config": str(path), "exists": True, "servers": servers},
                         ensure_ascii=False), file=out)
        return 0
    print(f"{path}: {len(servers)} server(s)", file=out)
    for server in servers:
        _print(server, out)
    return 0


def _in_file_order(path: Path, config: TeamToolsConfig) -> dict[str, dict[str, Any]]:
    written = entries_as_written(path)
    for name in (*config.servers, *config.refused):
        written.setdefault(name, {})
    return {name: entry for name, entry in written.items()
            if name in config.servers or name in config.refused}


def _server(name: str, written: dict[str, Any], config: TeamToolsConfig,
            found: dict[str, Probe]) -> dict[str, Any]:
    shown: dict[str, Any] = {"name": name, **transport(written)}
    if name in config.refused:
        places = written.get("places")
        return {**shown, "places": places if isinstance(places, list) else None,
                "status": "refused", "why": config.refused[name],
                "fix": refused_fix(config.refused[name])}
    entry = config.servers[name]
    shown["places"] = entry.places
    result = found[name]
    if isinstance(result, Unreachable):
        return {**shown, "status": "unreachable", "why": result.why, "fix": result.fix}
    if isinstance(result, SignsPeopleIn):
        # Its tools are each person's to list, with their own token.
        return {**shown, "status": "ok", "auth": "oauth", "signs_in_at": result.issuer,
                "tools": [], "left_out": [], "not_offered": []}
    return {**shown, "status": "ok", **_tools(name, entry, result)}


def _tools(name: str, entry: ServerEntry, offered: Offered) -> dict[str, Any]:
    listed = {tool.name for tool in offered.tools}
    kept = [{"name": tool.name, "called_as": tool_name(name, tool.name),
             "approval": "readOnly" if entry.approved_without_asking(tool.name) else "asked"}
            for tool in offered.tools if entry.tools.keeps(tool.name)]
    named = [*(entry.tools.include or []), *entry.tools.exclude, *entry.read_only]
    return {
        "tools": kept,
        "left_out": [tool.name for tool in offered.tools if not entry.tools.keeps(tool.name)],
        # A name the policy gives that the server does not offer: a typo, or a tool gone.
        "not_offered": sorted({tool for tool in named if tool not in listed}),
    }


def _print(server: dict[str, Any], out: TextIO) -> None:
    print(f"{server['name']}  {transport_line(server)}", file=out)
    if server["status"] == "refused":
        print(f"  not used: {server['why']}; fix: {server['fix']}", file=out)
        return
    places = server["places"]
    print(f"  used: {', '.join(places) if places is not None else 'everywhere'}", file=out)
    if server["status"] == "unreachable":
        print(f"  cannot be reached: {server['why']}; fix: {server['fix']}", file=out)
        return
    if server.get("auth") == "oauth":
        print(f"  each person connects their own account (signed in at"
              f" {server['signs_in_at']}); its tools are listed to them", file=out)
        return
    width = max((len(tool["name"]) for tool in server["tools"]), default=0)
    for tool in server["tools"]:
        how = RUNS if tool["approval"] == "readOnly" else ASKS
        print(f"  {tool['name']:<{width}}  {how}", file=out)
    if not server["tools"]:
        print("  no tools offered", file=out)
    if server["left_out"]:
        print(f"  left out (tools): {', '.join(server['left_out'])}", file=out)
    if server["not_offered"]:
        print(f"  named in mcp.json but not offered by the server:"
              f" {', '.join(server['not_offered'])}", file=out)
