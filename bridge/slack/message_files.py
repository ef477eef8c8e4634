"""The files a Slack message brings to its turn: completed, downloaded with the
workspace's token, and read.

Decided:
- Only the file objects of the message being answered are read (``Incoming.files``,
  from the event itself). Some events carry a file partly: Slack marks it
  ``file_access: "check_file_info"``, or leaves out ``url_private_download`` (mentions,
  DMs). Such a file is completed with ``files.info`` for that file's id, which came with
  the message; no other id is ever looked up, so naming a file cannot widen what Thoth
  reads (``slack_api/file_downloads.py``).
- A reply in a thread with no file of its own carries the files of the thread's root on
  its session's first turn: a question asked under a shared screenshot or PDF is about
  it. The root is asked of Slack (``conversations.replies``, limit 1), and its files go
  the same way as the message's own. Later turns of the session do not carry them again:
  what was read is in the episode, and recall finds it.
- Reading is CPU work (a PDF's text, an image scaled): it runs on the file reader's
  own thread (``bridge/files/reader.py``).
- Nothing here fails a turn: a file that cannot be had or read is ``Unread``, with why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge.files.reader import FileReader
from bridge.files.reading import Read, Unread
from bridge.files.shared_file import SharedFile
from bridge.slack.events import Incoming, files_of
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.file_downloads import Caps, download, file_name
from bridge.slack_api.workspace_client import WorkspaceClient

log = logging.getLogger(__name__)

FileObject = Mapping[str, Any]
FileRead = Read | Unread
# Modes of a file Slack holds no copy of: asking files.info about it tells nothing more.
NO_COPY_MODES = ("tombstone", "external", "hidden_by_limit")


class MessageFiles:
    """The files of a message, read for its turn."""

    def __init__(self, client: AsyncWebClient, reader: FileReader) -> None:
        self._client = client
        self._reader = reader

    async def of(self, incoming: Incoming, *, first_turn: bool) -> tuple[FileRead, ...]:
        """The message's files, read or said why not, in order (with ``first_turn``, a
        reply that has none carries its thread root's)."""
        objects: Sequence[FileObject] = incoming.files
        if not objects and first_turn and incoming.ts != incoming.thread_root:
            objects = await self._root_files(incoming)
        if not objects:
            return ()
        try:
            return await self._read(objects)
        except Exception:
            # Whatever went wrong costs the files, never the words of the message.
            log.exception("the files of a message in %s could not be read", incoming.channel)
            return tuple(_unread(file, "reading it failed") for file in objects)

    async def _read(self, objects: Sequence[FileObject]) -> tuple[FileRead, ...]:
        caps = Caps(max_bytes=self._reader.limits.max_bytes)
        # Past the count cap a file is only named: no need to complete it.
        whole = [await self._whole(file) if at < caps.most_files else file
                 for at, file in enumerate(objects)]
        token = _token(self._client)
        if token is None:
            return tuple(_unread(file, "no Slack token may download it") for file in objects)
        wanted = [file for file in whole if not isinstance(file, Unread)]
        downloaded = iter(await download(wanted, token, caps))
        fetched = [file if isinstance(file, Unread) else _described(next(downloaded), file)
                   for file in whole]
        return await self._reader.read_all(fetched)

    async def _whole(self, file: FileObject) -> FileObject | Unread:
        """``file``, completed by ``files.info`` when the event carried it partly."""
        partial = (file.get("file_access") == "check_file_info"
                   or not file.get("url_private_download"))
        if not partial or file.get("mode") in NO_COPY_MODES:
            return file
        file_id = str(file.get("id") or "")
        try:
            response = await self._client.files_info(file=file_id)
        except SLACK_FAILURES as error:
            log.warning("files.info for %s failed (%s)", file_id, type(error).__name__)
            # An address it has is still worth a try; without one there is nothing to fetch.
            return file if file.get("url_private") else _unread(
                file, f"Slack would not say where it is ({_code(error)})")
        info = response.get("file")
        found = files_of({"files": [info]}) if isinstance(info, dict) else ()
        if not found or found[0].get("id") != file_id:
            return _unread(file, "Slack did not describe it")
        return found[0]

    async def _root_files(self, incoming: Incoming) -> tuple[dict[str, Any], ...]:
        """The files of the thread's first message."""
        try:
            response = await self._client.conversations_replies(
                channel=incoming.channel, ts=incoming.thread_root, limit=1)
        except SLACK_FAILURES as error:
            log.warning("the root of thread %s in %s could not be read for its files (%s)",
                        incoming.thread_root, incoming.channel, _code(error))
            return ()
        root = next((message for message in response.get("messages") or []
                     if str(message.get("ts")) == incoming.thread_root), None)
        return files_of(root) if root is not None else ()


def unread_lines(files: Sequence[FileRead]) -> str:
    """One line for each file not read, naming it and why ('' for none)."""
    return "\n".join(file.line() for file in files if isinstance(file, Unread))


def _described(found: SharedFile | Unread, file: FileObject) -> SharedFile | Unread:
    return found if isinstance(found, SharedFile) else _as_its_object_says(found, file)


def _unread(file: FileObject, why: str) -> Unread:
    return _as_its_object_says(Unread(file_name(file), why), file)


def _as_its_object_says(unread: Unread, file: FileObject) -> Unread:
    """A file not downloaded, with what its object says of it (memory keeps that)."""
    return replace(unread, size=int(file.get("size") or 0),
                   mimetype=str(file.get("mimetype") or "") or None,
                   permalink=str(file.get("permalink") or "") or None)


def _token(client: AsyncWebClient) -> str | None:
    """The bot token of the workspace being served (installed into many, each has its
    own: ``workspace_client.py``)."""
    return client.call_token() if isinstance(client, WorkspaceClient) else client.token


def _code(error: Exception) -> str:
    response = getattr(error, "response", None)
    code = response.get("error") if response is not None else None
    return str(code) if code else type(error).__name__
