"""👤 on a reply: "this is about me" — the asker's identity memory notes the exchange;
removing it deletes the fact this reaction made (and only that one)."""

from __future__ import annotations

from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction, keep_effect, pop_effect
from bridge.slack.stores import SlackStores
from layers.identity.protocol import Person
from layers.shared.audit import slack_actor

BUST = "bust_in_silhouette"


def about_me(kit: Kit) -> ReplyReaction:
    async def handle(reacted: Reacted) -> None:
        identity, reply, user = kit.identity, reacted.reply, reacted.user
        if identity is None:
            return
        person = Person(reply.team, user, (await kit.directory.user(user)).name)
        if not reacted.added:
            kept = await kit.stores.run(lambda stores: pop_effect(stores, reply, BUST, user))
            if kept:
                await identity.forget(person, kept)
                await kit.stores.run(lambda stores: stores.audit.record(
                    actor=slack_actor(user), action="fact.forget", target=f"fact:{kept}",
                    origin="slack"))
            return
        episode = await kit.stores.run(lambda stores: stores.episodic.store.get(
            reacted.episode_id))
        if episode is None:
            return
        if await kit.stores.run(lambda stores: stores.tombstones.said_before_forget(
                person, episode.created_at)):
            return  # asked before they asked to be forgotten
        text = f"marked as about them the answer to: {episode.user_text[:160]}"
        made = await identity.observe(
            person, [text], session_id=reply.session_id, source="👤 reaction"
        )
        # Only the fact this reaction made is undone by removing it (a duplicate makes none).
        if made:
            fact_id = made[0]

            def keep(stores: SlackStores) -> None:
                keep_effect(stores, reply, BUST, user, fact_id)
                stores.audit.record(actor=slack_actor(user), action="fact.add",
                                    target=f"fact:{fact_id}", origin="slack")

            await kit.stores.run(keep)

    # Silently the asker's: someone else's 👤 says nothing about them, so nothing is said.
    return ReplyReaction((BUST,), asker_only=True, handle=handle, says_it_is_the_askers=False)
