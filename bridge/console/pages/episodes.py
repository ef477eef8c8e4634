"""Episodes: searched with the turns' own recall, as the signed-in person may see them;
forgotten for good by the person who asked, or the operator."""

from __future__ import annotations

from bridge.console.parts import ConsoleParts, ConsoleStores
from bridge.console.sign_in import ConsoleUser
from bridge.forget_exchange import forget_exchange
from layers.episodic.episode import Episode, Hit
from layers.places import Viewer


async def viewer_of(parts: ConsoleParts, user: ConsoleUser) -> Viewer:
    """What the person may read, by the rule every turn follows: a member sees what they
    would in a DM with Thoth — their own DMs and the public channels of their workspace —
    and the private channels and group DMs Slack says they are in."""
    if user.sees_everything or user.team is None or user.user is None:
        return Viewer(sees_everything=user.sees_everything)
    member_of = await parts.memberships.private_channels(user.team, user.user)
    return Viewer(user.team, "console", "im", user.user, member_of=member_of)


def seen_as(user: ConsoleUser, view_as: str) -> ConsoleUser:
    """``user``, or for a founder asking "view as TEAM:USER", that member as they would
    sign in: the preview proves what someone else would see, by the same rule."""
    team, _, person = view_as.strip().partition(":")
    if not (user.founder and team and person):
        return user
    return ConsoleUser(f"slack:{person}", person, sees_everything=False, founder=False,
                       team=team, user=person)


async def search(parts: ConsoleParts, user: ConsoleUser, query: str) -> list[Hit]:
    if not query.strip():
        return []
    viewer = await viewer_of(parts, user)
    return await parts.stores.run(
        lambda stores: stores.episodic.recall(query, viewer, k=parts.results))


def may_forget(user: ConsoleUser, episode: Episode) -> bool:
    return user.sees_everything or (
        episode.user is not None and (episode.team, episode.user) == (user.team, user.user))


async def forget(parts: ConsoleParts, user: ConsoleUser, episode_id: str,
                 origin: str) -> bool:
    """Forget one episode; False when it is not there or not theirs to forget."""

    def change(stores: ConsoleStores) -> bool:
        episode = stores.episodic.store.get(episode_id)
        if episode is None or not may_forget(user, episode):
            return False
        return forget_exchange(stores, episode_id, actor=user.actor, who=user.name,
                               origin=origin)

    return await parts.stores.run(change)
