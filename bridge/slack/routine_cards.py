"""Routines on cards in Slack: the card that shows a proposed routine to its asker, its
Create and Cancel, and the buttons of `/thoth routines` (Pause / Resume, Run now, Delete).

The proposal rides in the Create button (``slack_api/routine_cards.py``), so any replica
takes the click; only its asker may create or cancel it, and anyone else is told so in a
line only they see. A routine's buttons go through ``RoutineManager`` (its creator, or a
founder; audited there), each answered in a line only the clicker sees, and the list they
clicked on is shown again as it is now.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bridge.pipeline.turn import Turn
from bridge.routines.making import Proposed, RoutineMaker
from bridge.routines.managing import RoutineManager
from bridge.routines.store import RoutineStore
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.escaping import escape, mention
from bridge.slack_api.routine_cards import (
    DELETE,
    PAUSE,
    RESUME,
    RUN_NOW,
    answered_card,
    created,
    proposal_card,
    proposal_of,
    proposal_value,
    routine_list,
)
from layers.shared.audit import slack_actor
from layers.shared.errors import BadInput

log = logging.getLogger(__name__)

ORIGIN = "slack card"
WEBHOOK_TIMEOUT_S = 10
_DONE = {PAUSE: "Paused", RESUME: "Resumed", RUN_NOW: "Running now:", DELETE: "Deleted"}


class RoutineCards:
    def __init__(self, client: AsyncWebClient, maker: RoutineMaker, manager: RoutineManager,
                 *, founders: frozenset[str]) -> None:
        self._client = client
        self._maker = maker
        self._manager = manager
        self._founders = founders

    async def post(self, proposed: Proposed, turn: Turn, channel: str,
                   thread_root: str) -> str:
        """The card in the thread; what the model is told."""
        value = proposal_value(proposed)
        if value is None:
            return ("That routine is too long to show on a card: shorten its instruction and"
                    " propose it again (or the person can type /thoth routine add).")
        text, blocks = proposal_card(proposed, value)
        try:
            await self._client.chat_postMessage(channel=channel, thread_ts=thread_root or None,
                                                text=text, blocks=blocks)
        except SLACK_FAILURES as error:
            log.warning("the card proposing a routine could not be posted: %s", error)
            return "The card proposing the routine could not be posted: it was not made."
        who = turn.user_name or "the person"
        return (f"A card in this thread now shows the routine to {who}, with its next three"
                " run times, to Create or Cancel; it is not made until they press Create."
                " Tell them briefly what you proposed, then stop.")

    async def create(self, body: dict[str, Any]) -> None:
        user, channel, _, card_ts = _clicked(body)
        proposed = await self._askers(body, "create")
        if proposed is None:
            return
        try:
            routine = await self._maker.make(proposed, origin=ORIGIN,
                                             made_from=f"card:{channel}:{card_ts}")
        except BadInput as refused:
            await self._tell(channel, user, f"Not created: {escape(str(refused))}")
            return
        await self._answered(channel, card_ts, proposed, created(routine))

    async def cancel(self, body: dict[str, Any]) -> None:
        user, channel, _, card_ts = _clicked(body)
        proposed = await self._askers(body, "cancel")
        if proposed is None:
            return
        await self._answered(channel, card_ts, proposed,
                             f"Cancelled by {mention(user)}: no routine was made.")

    async def _askers(self, body: dict[str, Any], verb: str) -> Proposed | None:
        """The card's proposal when its asker clicked; else None, the clicker told why."""
        user, channel, value, _ = _clicked(body)
        try:
            proposed = proposal_of(value)
        except BadInput as error:
            await self._tell(channel, user, str(error))
            return None
        if user != proposed.creator:
            await self._tell(channel, user, f"Only {mention(proposed.creator)} can {verb}"
                                            " this routine: they asked for it.")
            return None
        return proposed

    async def manage(self, body: dict[str, Any], action: str) -> None:
        """A button of `/thoth routines`: ``action`` is its action id."""
        user, channel, routine_id, _ = _clicked(body)
        kept = await self._maker.store.run(lambda s: s.get(routine_id))
        by, may_all = slack_actor(user), user in self._founders
        try:
            if action == DELETE:
                await self._manager.delete(routine_id, by=by, may_all=may_all, origin=ORIGIN)
            elif action == PAUSE:
                await self._manager.pause(routine_id, by=by, may_all=may_all, origin=ORIGIN)
            elif action == RESUME:
                await self._manager.resume(routine_id, by=by, may_all=may_all, origin=ORIGIN)
            else:
                await self._manager.run_now(routine_id, by=by, may_all=may_all, origin=ORIGIN)
        except BadInput as refused:
            await self._tell(channel, user, escape(str(refused)))
            return
        await self._tell(channel, user, f"{_DONE[action]} routine `{escape(routine_id)}`.")
        if kept is not None:
            await self._list_again(body, kept.team, kept.creator)

    async def _list_again(self, body: dict[str, Any], team: str, creator: str) -> None:
        url = str(body.get("response_url") or "")
        if not url:
            return
        routines = await self._maker.store.run(lambda s: RoutineStore.of_person(s, team,
                                                                                creator))
        text, blocks = routine_list(routines)
        try:
            await AsyncWebhookClient(url, timeout=WEBHOOK_TIMEOUT_S).send(
                text=text, blocks=blocks or None, replace_original=True,
                response_type="ephemeral")
        except SLACK_FAILURES as error:
            log.info("the routines' list could not be shown again: %s", error)

    async def _answered(self, channel: str, card_ts: str, proposed: Proposed,
                        verdict: str) -> None:
        text, blocks = answered_card(proposed, verdict)
        try:
            await self._client.chat_update(channel=channel, ts=card_ts, text=text,
                                           blocks=blocks)
        except SLACK_FAILURES as error:
            log.warning("the routine card %s could not be updated: %s", card_ts, error)

    async def _tell(self, channel: str, user: str, text: str) -> None:
        try:
            await self._client.chat_postEphemeral(channel=channel, user=user, text=text)
        except SLACK_FAILURES as error:
            log.warning("could not tell %s about their click: %s", user, error)


def _clicked(body: dict[str, Any]) -> tuple[str, str, str, str]:
    """Who clicked, in which channel, the button's value and the message's ts."""
    action = (body.get("actions") or [{}])[0]
    container = body.get("container") or {}
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    card_ts = str(container.get("message_ts") or (body.get("message") or {}).get("ts") or "")
    return (str((body.get("user") or {}).get("id") or ""), channel,
            str(action.get("value") or ""), card_ts)
