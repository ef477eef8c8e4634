"""Every console page as people meet it: on a phone (390 px) and a desktop, checked with
axe-core (no serious or critical violation), without sideways scrolling on the phone,
with a skip link as the first Tab stop; a screenshot of each is kept in
build/test-artifacts/console/ (desktop and phone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.all_tables import ALL_SCHEMAS
from bridge.team_tools.grants import Grants
from layers.shared.places import LOCAL_TEAM
from layers.shared.storage.engines import open_sqlite
from tests.integration.test_console_browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, console

__all__ = ["console"]  # the fixture, shared with the browser tests

# Each page, as the operator reaches it; the error page too.
PAGES = {
    "overview": "/", "episodes": "/episodes", "search": "/episodes?q=deploy+the+api",
    "episode": "/episodes/e-deploy", "notes": "/notes", "skills": "/skills",
    "reflections": "/reflections", "persona": "/persona",
    "person": "/people?team=local&user=dana",
    "forget-person": "/people/local/dana/forget", "spend": "/spend", "health": "/health",
    "audit": "/audit", "audit-tools": "/audit?action=tool", "export": "/export",
    "tokens": "/tokens", "not-found": "/no/such/page",
}
WIDTHS = {"phone": 390, "desktop": 1280}
SERIOUS = ("serious", "critical")


def _problems(results: Any) -> list[str]:
    return [f"{violation['id']} ({violation['impact']}): "
            f"{[node['target'] for node in violation['nodes']][:3]}"
            for violation in results.response["violations"]
            if violation.get("impact") in SERIOUS]


@pytest.fixture
def granted(console: tuple[str, Path]) -> tuple[str, Path]:
    """The console, with a tool dana always allows: her page lists it with its Revoke."""
    db = open_sqlite(console[1] / "thoth.db", schemas=ALL_SCHEMAS)
    try:
        Grants(db).grant(LOCAL_TEAM, "dana", "github", "create_issue")
    finally:
        db.close()
    return console


def test_every_page_is_accessible_and_fits_a_phone(granted: tuple[str, Path]) -> None:
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import sync_playwright

    link, _ = granted
    base = link.split("/console/")[0] + "/console"
    SHOTS.mkdir(parents=True, exist_ok=True)
    axe = Axe()
    problems: dict[str, list[str]] = {}
    sideways: dict[str, int] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{base}/")  # signed out: the sign-in page
            signed_out = _problems(axe.run(page))
            if signed_out:
                problems["signed-out"] = signed_out
            page.goto(link)
            for device, width in WIDTHS.items():
                page.set_viewport_size({"width": width, "height": 844 if width < 500 else 900})
                for name, path in PAGES.items():
                    page.goto(base + path)
                    found = _problems(axe.run(page))
                    if found:
                        problems[f"{name} ({device})"] = found
                    overflow = page.evaluate(
                        "document.documentElement.scrollWidth - window.innerWidth")
                    if device == "phone" and overflow > 0:
                        sideways[name] = overflow
                    page.screenshot(path=str(SHOTS / f"{name}-{device}.png"), full_page=True)
            # The first Tab stop skips the header's links, to the page's own content.
            page.goto(f"{base}/episodes")
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "skip"
            page.keyboard.press("Enter")
            assert page.evaluate("location.hash") == "#content"
        finally:
            browser.close()
    assert problems == {}
    assert sideways == {}
