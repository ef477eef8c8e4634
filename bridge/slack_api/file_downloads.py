"""A message's files, downloaded from Slack with the bot token of the workspace it was
said in.

Decided:
- Only the files of the message being answered are downloaded: this takes the file
  objects Slack delivered with the message (or that Slack listed for it), never a bare
  file id, so no one can widen what Thoth reads by naming another file.
- Caps come before bytes. A file over the size cap is not fetched at all (Slack says the
  size in the file's object), and the body is cut off at the cap whatever the object
  said. Past ``most_files`` files a message, the rest are named and not read. Each
  download has a timeout.
- A download answered with Slack's sign-in page (an HTML page, status 200, which is how
  Slack answers a token that may not read the file) is no access: it is said so, and
  never shown to the model as the file.
- A failing download costs that file only; the turn goes on, and the person is told.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from bridge.files.reading import MB, Unread
from bridge.files.shared_file import SharedFile

NO_ACCESS = ("Slack answered with its sign-in page, so Thoth may not read it (the app"
             " needs the files:read scope)")


@dataclass(frozen=True)
class Caps:
    max_bytes: int = 20 * MB
    most_files: int = 8
    timeout_s: float = 30.0


async def download(files: Sequence[Mapping[str, Any]], token: str, caps: Caps = Caps(),
                   ) -> list[SharedFile | Unread]:
    """Each of a message's ``files`` (Slack's file objects), read or said why not, in
    their order."""
    read: list[SharedFile | Unread] = []
    timeout = aiohttp.ClientTimeout(total=caps.timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for index, file in enumerate(files):
            name = file_name(file)
            if index >= caps.most_files:
                read.append(Unread(name, f"Thoth reads the first {caps.most_files} files"
                                         " of a message"))
                continue
            read.append(await _one(session, file, name, token, caps))
    return read


def file_name(file: Mapping[str, Any]) -> str:
    """What a file is called where Thoth names it: its name, else its title, else its id."""
    return str(file.get("name") or file.get("title") or file.get("id") or "a file")


async def _one(session: aiohttp.ClientSession, file: Mapping[str, Any], name: str,
               token: str, caps: Caps) -> SharedFile | Unread:
    url = file.get("url_private_download") or file.get("url_private")
    if file.get("mode") in ("tombstone", "external") or not url:
        return Unread(name, "Slack holds no copy of it to read (deleted, or kept outside"
                            " Slack)")
    size = int(file.get("size") or 0)
    if size > caps.max_bytes:
        return Unread(name, f"it is {size / MB:.1f} MB, over the {caps.max_bytes // MB} MB"
                            " files may be")
    try:
        async with session.get(str(url), headers={"Authorization": f"Bearer {token}"},
                               allow_redirects=False) as response:
            if response.status != 200:
                return Unread(name, f"Slack answered the download with {response.status}")
            data = await response.content.read(caps.max_bytes + 1)
            if len(data) > caps.max_bytes:
                return Unread(name, f"it is over the {caps.max_bytes // MB} MB files may be")
            if _sign_in_page(response.headers.get("Content-Type", ""), data):
                return Unread(name, NO_ACCESS)
    except TimeoutError:
        return Unread(name, f"the download took longer than {caps.timeout_s:g} s")
    except aiohttp.ClientError as error:
        return Unread(name, f"the download failed ({type(error).__name__})")
    mimetype = file.get("mimetype")
    return SharedFile(name, data, str(mimetype) if mimetype else None,
                      str(file.get("permalink") or "") or None)


def _sign_in_page(content_type: str, data: bytes) -> bool:
    """Slack's sign-in page, where the file was asked for: an HTML page that the file
    itself is not (a shared .html file is served as the file's own type)."""
    head = data[:512].lstrip().lower()
    return content_type.startswith("text/html") and (
        head.startswith(b"<!doctype html") or head.startswith(b"<html"))
