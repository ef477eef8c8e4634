"""The compose example keeps one memory, as the README promises. Docker cannot run on these
machines, so the files are read as compose reads them (YAML with anchors and merge keys)
and checked against what the deployment needs: one image, one brain remote every process
shares, a home volume each, HTTPS in front, health checks, no root."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
IMAGE = "thoth:local"


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DEPLOY / "compose.yml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def _thoth_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: service for name, service in compose["services"].items()
            if service.get("image") == IMAGE and name != "brain-remote"}


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """Mount point -> volume name."""
    return {entry.split(":")[1]: entry.split(":")[0] for entry in service.get("volumes", [])}


def test_one_image_built_once_and_run_as_a_user_that_is_not_root() -> None:
    compose = _compose()
    built = [name for name, service in compose["services"].items() if "build" in service]
    assert built == ["brain-remote"]
    assert compose["services"]["brain-remote"]["image"] == IMAGE
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    install = next(line for line in dockerfile.splitlines() if "pip install" in line)
    assert " -e " not in install and "pip install --no-cache-dir . " in install


def test_every_process_shares_the_database_and_one_brain_remote_and_has_its_own_home() -> None:
    compose = _compose()
    services = _thoth_services(compose)
    assert {n for n in services if n.startswith("serve")} == {"serve-1", "serve-2", "serve-3"}
    assert {n for n in services if n.startswith("worker")} == {"worker-1", "worker-2"}
    remotes = set()
    homes = []
    for name, service in services.items():
        env = service["environment"]
        assert re.fullmatch(r"postgresql://\S+@postgres/\w+", env["DATABASE_URL"])
        assert env["BACKGROUND_WORK"] == "workers"
        remote = env["BRAIN_REMOTE"]
        mounts = _mounts(service)
        shared = [point for point in mounts if remote.startswith(point + "/")]
        assert shared and mounts[shared[0]] == "brain", name  # on the shared volume
        remotes.add(remote)
        homes.append(mounts[env["THOTH_HOME"]])
        assert service["depends_on"]["brain-remote"]["condition"] == (
            "service_completed_successfully")
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert len(remotes) == 1
    assert len(set(homes)) == len(homes) == 5  # a home each: never one brain clone shared
    made = compose["services"]["brain-remote"]
    assert remotes.pop() in " ".join(made["command"]) and "--bare" in " ".join(made["command"])
    assert compose["services"]["postgres"]["image"].startswith("pgvector/pgvector:")


def test_https_in_front_of_the_replicas_that_answer_their_health_check() -> None:
    compose = _compose()
    proxy = compose["services"]["proxy"]
    assert proxy["image"].startswith("caddy:") and "443:443" in proxy["ports"]
    caddyfile = (DEPLOY / "Caddyfile").read_text()
    upstreams = re.search(r"reverse_proxy ([^{]+)\{", caddyfile)
    assert upstreams is not None
    assert upstreams.group(1).split() == ["serve-1:3000", "serve-2:3000", "serve-3:3000"]
    assert "health_uri /health" in caddyfile
    for name, service in compose["services"].items():
        if name not in ("brain-remote", "proxy"):
            assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
    serve_check = " ".join(compose["services"]["serve-1"]["healthcheck"]["test"])
    assert "/health" in serve_check
    assert '"/health"' in (ROOT / "bridge" / "slack" / "http_server.py").read_text()


def test_the_readme_says_which_slack_mode_the_compose_runs_and_why() -> None:
    readme = (ROOT / "README.md").read_text()
    deployment = readme[readme.index("## Deployment"):]
    deployment = deployment[: deployment.index("\n## ", 1)]
    assert "deploy/compose.yml" in deployment and "HTTP mode" in deployment
    assert "Socket Mode" in deployment and "BRAIN_REMOTE" in deployment
    assert _compose()["x-thoth"]["environment"]["SLACK_APP_TOKEN"] == ""
