"""Where a memory's page is in the console, for links from Slack (``/recall`` results,
approval cards, the App Home tab).

``CONSOLE_URL`` is where browsers reach the host serving the console (it is mounted at
/console). Without it Slack shows no links: Thoth does not guess its own address.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class ConsoleLinks:
    root: str

    @property
    def home(self) -> str:
        return f"{self.root}/console"

    def episode(self, episode_id: str) -> str:
        return f"{self.home}/episodes/{quote(episode_id, safe='')}"

    def note(self, note_id: str) -> str:
        return f"{self.home}/notes/{quote(note_id, safe='')}"

    def skills(self) -> str:
        return f"{self.home}/skills"


def console_links(console_url: str | None) -> ConsoleLinks | None:
    url = (console_url or "").strip().rstrip("/")
    return ConsoleLinks(url) if url else None
