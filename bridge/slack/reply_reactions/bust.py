"""👤 on a reply: "this is about me" — the asker's identity memory notes the exchange;
removing it deletes the fact this reaction made (and only that one)."""

from __future__ import annotations

import asyncio

from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction
from layers.identity.protocol import Person

BUST = "bust_in_silhouette"


def bust(kit: Kit) -> ReplyReaction:
    async def handle(reacted: Reacted) -> None:
        identity, reply, user = kit.parts.identity, reacted.reply, reacted.user
        if identity is None:
            return
        person = Person(reply.team, user, (await kit.directory.user(user)).name)
        if not reacted.added:
            kept = await asyncio.to_thread(kit.pop_effect, reply, BUST, user)
            if kept:
                await identity.forget(person, kept)
            return
        episode = await asyncio.to_thread(kit.parts.episodic.store.get, reacted.episode_id)
        if episode is None:
            return
        if await asyncio.to_thread(
            kit.parts.tombstones.said_before_forget, person, episode.created_at
        ):
            return  # asked before they asked to be forgotten
        text = f"marked as about them the answer to: {episode.user_text[:160]}"
        made = await identity.observe(
            person, [text], session_id=reply.session_id, source="👤 reaction"
        )
        # Only the fact this reaction made is undone by removing it (a duplicate makes none).
        for fact_id in made[:1]:
            await asyncio.to_thread(kit.keep_effect, reply, BUST, user, fact_id)

    # Silently the asker's: someone else's 👤 says nothing about them, so nothing is said.
    return ReplyReaction((BUST,), asker_only=True, handle=handle, says_it_is_the_askers=False)
