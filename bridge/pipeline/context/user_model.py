"""``<user-model>``: what the identity layer (L2) knows of the speaker, for this message.

Fetched for the message (a backend may search its facts by it), so it may change from
one turn to the next; what people said of themselves travels as quoted data.
"""

from __future__ import annotations

from bridge.pipeline.context import ContextAsk, ContextBlock, tagged
from layers.identity.user_models import UserModels
from layers.shared.quoting import quoted


class UserModel:
    name = "user-model"
    step: str | None = None
    first_turn_only = False

    def __init__(self, user_models: UserModels, *, deadline_s: float) -> None:
        """``deadline_s``: ``USER_MODEL_TIMEOUT_S``; a remote backend (Honcho) may be slow."""
        self._user_models = user_models
        self.deadline_s = deadline_s

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        person = ask.turn.person
        if person is None:
            return None
        return user_model_block(
            await self._user_models.for_message(person, ask.turn.text, ask.turn.viewer))


def user_model_block(model: str | None) -> ContextBlock | None:
    if not model:
        return None
    return ContextBlock(UserModel.name, tagged(UserModel.name, quoted(model)))
