"""The control API under ``/sim/``: act as guests, look inside, reset, inject faults, change limits.

JSON in and out. Errors are ``{"error": "..."}`` with 400 (bad body) or 404 (unknown thing).

- ``POST /sim/users/{user_id}/messages`` ``{"text", "first_name"?, "last_name"?, "username"?,
  "language_code"?, "chat_id"?, "chat_title"?, "reply_to_message_id"?}``: the user writes to the bot (private
  chat unless ``chat_id`` < 0 names a group); returns the ``Message``.
- ``POST /sim/users/{user_id}/block`` / ``/unblock``: the user blocks / unblocks the bot.
- ``GET /sim/users``: known users with ``started``/``blocked``.
- ``GET /sim/users/{user_id}/commands``: the command menu the user sees in their private chat with the bot
  (``setMyCommands`` lists by scope and language, :func:`~simulators.telegram.methods.commands.menu_for`).
- ``POST /sim/callbacks`` ``{"user_id", "message_id", "data", "chat_id"?}``: press an inline button; returns
  ``{"id", "update_id"}``. ``GET /sim/callbacks/{id}``: the query and the bot's answer.
- ``GET /sim/chats``; ``GET /sim/chats/{chat_id}/messages``: both directions, oldest first, each a Bot API
  ``Message`` plus ``from_bot``, ``reply_to_message_id`` and the raw ``reply_markup``.
- ``GET /sim/updates``: updates not yet confirmed by ``getUpdates``.
- ``GET /sim/sticker-sets``; ``GET /sim/sticker-sets/{name}``; ``GET /sim/files/{file_id}`` (raw bytes).
- ``GET /sim/calls?method=&since=``: the Bot API call log.
- ``POST /sim/reset``; ``GET|POST /sim/faults`` (body: ``faults.FaultSpec``); ``DELETE /sim/faults?chat_id=``
  drops the faults aimed at one chat (all without ``chat_id``) and returns them;
  ``GET|POST /sim/limits`` (body: any fields of ``config.Limits``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simulators.telegram import wire
from simulators.telegram.config import Limits
from simulators.telegram.faults import FaultSpec
from simulators.telegram.methods.commands import menu_for
from simulators.telegram.simulator import ControlError, Simulator
from simulators.telegram.state import MessageRecord

Route = Callable[[web.Request], Awaitable[web.StreamResponse]]
ModelT = TypeVar("ModelT", bound=BaseModel)


class UserMessageIn(BaseModel):
    """Body of ``POST /sim/users/{user_id}/messages``."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=4096)
    first_name: str | None = None
    last_name: str | None = None
    username: str | None = None
    language_code: str | None = None
    chat_id: int | None = None
    chat_title: str | None = None
    reply_to_message_id: int | None = None


class CallbackIn(BaseModel):
    """Body of ``POST /sim/callbacks``; ``chat_id`` defaults to the user's private chat."""

    model_config = ConfigDict(extra="forbid")

    user_id: int = Field(gt=0)
    message_id: int
    data: str
    chat_id: int | None = None


class LimitsIn(BaseModel):
    """Body of ``POST /sim/limits``: the fields to change."""

    model_config = ConfigDict(extra="forbid")

    private_per_second: float | None = Field(None, ge=0)
    private_burst: int | None = Field(None, ge=1)
    group_per_minute: float | None = Field(None, ge=0)
    global_per_second: float | None = Field(None, ge=0)
    callback_answer_timeout: float | None = Field(None, ge=0)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _body(request: web.Request, model: type[ModelT]) -> ModelT:
    try:
        raw = await request.json() if request.can_read_body else {}
        return model.model_validate(raw)
    except ValidationError as error:
        # str(), not .json(): a lone surrogate in the input cannot be encoded as JSON by pydantic
        raise ControlError(400, str(error)[:2000]) from None
    except ValueError:
        raise ControlError(400, "body must be JSON") from None


def _int(request: web.Request, name: str) -> int:
    try:
        return int(request.match_info[name])
    except ValueError:
        raise ControlError(400, f"{name} must be an integer") from None


class ControlApi:
    """Routes of the control API for one simulator."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Register every ``/sim/`` route."""
        routes: list[tuple[str, str, Route]] = [
            ("POST", "/sim/users/{user_id}/messages", self.post_message),
            ("POST", "/sim/users/{user_id}/block", self.block),
            ("POST", "/sim/users/{user_id}/unblock", self.unblock),
            ("GET", "/sim/users", self.users),
            ("GET", "/sim/users/{user_id}/commands", self.user_commands),
            ("POST", "/sim/callbacks", self.post_callback),
            ("GET", "/sim/callbacks/{callback_id}", self.callback),
            ("GET", "/sim/chats", self.chats),
            ("GET", "/sim/chats/{chat_id}/messages", self.chat_messages),
            ("GET", "/sim/updates", self.updates),
            ("GET", "/sim/sticker-sets", self.sticker_sets),
            ("GET", "/sim/sticker-sets/{name}", self.sticker_set),
            ("GET", "/sim/files/{file_id}", self.file),
            ("GET", "/sim/calls", self.calls),
            ("POST", "/sim/reset", self.reset),
            ("GET", "/sim/faults", self.faults),
            ("POST", "/sim/faults", self.add_fault),
            ("DELETE", "/sim/faults", self.clear_faults),
            ("GET", "/sim/holds", self.holds),
            ("POST", "/sim/holds/lift", self.lift_holds),
            ("GET", "/sim/limits", self.limits),
            ("POST", "/sim/limits", self.set_limits),
        ]
        for verb, path, handler in routes:
            router.add_route(verb, path, self._guard(handler))

    def _guard(self, handler: Route) -> Route:
        async def guarded(request: web.Request) -> web.StreamResponse:
            try:
                return await handler(request)
            except ControlError as error:
                return _error(error.status, error.message)

        return guarded

    # --- acting as users --------------------------------------------------------------------------------

    async def post_message(self, request: web.Request) -> web.StreamResponse:
        """A user sends a message to the bot (private chat or group)."""
        sim = self._sim
        user_id = _int(request, "user_id")
        if user_id <= 0 or user_id == sim.config.bot_id:
            raise ControlError(400, "user_id must be a positive id other than the bot's")
        body = await _body(request, UserMessageIn)
        chat_id = body.chat_id if body.chat_id is not None else user_id
        if chat_id > 0 and chat_id != user_id:
            raise ControlError(400, "a private chat's id is the user's id; groups have negative ids")
        user = sim.remember_user(
            user_id,
            first_name=body.first_name,
            last_name=body.last_name,
            username=body.username,
            language_code=body.language_code,
        )
        chat = sim.remember_chat(chat_id, title=body.chat_title)
        record = sim.post_user_message(user, chat, body.text, reply_to_message_id=body.reply_to_message_id)
        return web.json_response(sim.message_json(record))

    async def block(self, request: web.Request) -> web.StreamResponse:
        """The user blocks the bot: sends to them fail with 403 "bot was blocked by the user"."""
        return self._set_blocked(_int(request, "user_id"), blocked=True)

    async def unblock(self, request: web.Request) -> web.StreamResponse:
        """The user unblocks the bot."""
        return self._set_blocked(_int(request, "user_id"), blocked=False)

    def _set_blocked(self, user_id: int, *, blocked: bool) -> web.StreamResponse:
        chat = self._sim.state.chats.get(user_id)
        if chat is None or chat.type != "private":
            raise ControlError(404, f"user {user_id} has no private chat with the bot")
        chat.blocked = blocked
        self._sim.touch()
        return web.json_response({"user_id": user_id, "blocked": blocked})

    async def users(self, request: web.Request) -> web.StreamResponse:
        """Every user the bot has seen."""
        state = self._sim.state
        result = []
        for user in state.users.values():
            chat = state.chats.get(user.id)
            result.append(
                {
                    **wire.user(user),
                    "started": bool(chat and chat.started),
                    "blocked": bool(chat and chat.blocked),
                }
            )
        return web.json_response(result)

    async def user_commands(self, request: web.Request) -> web.StreamResponse:
        """The command menu a known user sees in their private chat (404 for an unknown user)."""
        user_id = _int(request, "user_id")
        user = self._sim.state.users.get(user_id)
        if user is None:
            raise ControlError(404, f"user {user_id} is not known")
        return web.json_response(menu_for(self._sim, user))

    async def post_callback(self, request: web.Request) -> web.StreamResponse:
        """A user presses an inline button under a bot message."""
        sim = self._sim
        body = await _body(request, CallbackIn)
        user = sim.state.users.get(body.user_id) or sim.remember_user(body.user_id)
        chat_id = body.chat_id if body.chat_id is not None else body.user_id
        callback = sim.press_button(user, chat_id, body.message_id, body.data)
        return web.json_response({"id": callback.id, "update_id": callback.update_id})

    async def callback(self, request: web.Request) -> web.StreamResponse:
        """A callback query and whether (and how) the bot answered it."""
        callback = self._sim.state.callbacks.get(request.match_info["callback_id"])
        if callback is None:
            raise ControlError(404, "unknown callback query")
        return web.json_response({**callback.model_dump(), "answered": callback.answered_at is not None})

    # --- looking inside ---------------------------------------------------------------------------------

    def _message_view(self, record: MessageRecord) -> dict[str, Any]:
        view = self._sim.message_json(record)
        view.pop("reply_to_message", None)
        view.update(
            from_bot=record.from_bot,
            reply_to_message_id=record.reply_to_message_id,
            reply_markup=record.reply_markup,
        )
        return view

    async def chats(self, request: web.Request) -> web.StreamResponse:
        """Every chat with counts and the last message's text."""
        state = self._sim.state
        result = []
        for chat in state.chats.values():
            messages = list(state.messages.get(chat.id, {}).values())
            last = messages[-1] if messages else None
            result.append(
                {
                    **wire.chat(state, chat),
                    "started": chat.started,
                    "blocked": chat.blocked,
                    "message_count": len(messages),
                    "last_message_text": (last.text or last.caption) if last else None,
                }
            )
        return web.json_response(result)

    async def chat_messages(self, request: web.Request) -> web.StreamResponse:
        """All messages of one chat, oldest first."""
        chat_id = _int(request, "chat_id")
        if chat_id not in self._sim.state.chats:
            raise ControlError(404, f"chat {chat_id} not found")
        messages = self._sim.state.messages.get(chat_id, {}).values()
        return web.json_response([self._message_view(record) for record in messages])

    async def updates(self, request: web.Request) -> web.StreamResponse:
        """Updates still waiting for ``getUpdates`` to confirm them."""
        return web.json_response(self._sim.pending_updates(0, len(self._sim.state.updates)))

    async def sticker_sets(self, request: web.Request) -> web.StreamResponse:
        """Every sticker set, without its stickers."""
        return web.json_response(
            [
                {
                    "name": record.name,
                    "title": record.title,
                    "owner_user_id": record.owner_user_id,
                    "sticker_type": record.sticker_type,
                    "sticker_count": len(record.stickers),
                    "created_at": record.created_at,
                }
                for record in self._sim.state.sticker_sets.values()
            ]
        )

    async def sticker_set(self, request: web.Request) -> web.StreamResponse:
        """One set as ``getStickerSet`` returns it, plus owner, emoji lists, keywords and image URLs."""
        state = self._sim.state
        record = state.find_sticker_set(request.match_info["name"])
        if record is None:
            raise ControlError(404, "sticker set not found")
        view = wire.sticker_set(state, record)
        view.update(owner_user_id=record.owner_user_id, created_at=record.created_at)
        for sticker, item in zip(view["stickers"], record.stickers, strict=True):
            sticker.update(
                emoji_list=item.emoji_list,
                keywords=item.keywords,
                format=state.files[item.file_id].sticker_format,
                url=f"/sim/files/{item.file_id}",
            )
        return web.json_response(view)

    async def file(self, request: web.Request) -> web.StreamResponse:
        """The raw bytes of a file."""
        record = self._sim.state.files.get(request.match_info["file_id"])
        data = self._sim.file_bytes(record) if record is not None else None
        if record is None or data is None:
            raise ControlError(404, "file not found")
        return web.Response(
            body=data, content_type=record.mime_type, headers={"Cache-Control": "max-age=3600"}
        )

    async def calls(self, request: web.Request) -> web.StreamResponse:
        """The call log, optionally of one method and after sequence number ``since``."""
        try:
            since = int(request.query.get("since", "0"))
        except ValueError:
            raise ControlError(400, "since must be an integer") from None
        records = self._sim.calls.select(request.query.get("method") or None, since)
        return web.json_response([record.model_dump() for record in records])

    # --- steering ---------------------------------------------------------------------------------------

    async def reset(self, request: web.Request) -> web.StreamResponse:
        """Forget everything (the update counter keeps counting)."""
        self._sim.reset()
        return web.json_response({"ok": True})

    async def faults(self, request: web.Request) -> web.StreamResponse:
        """Faults still queued."""
        return web.json_response([spec.model_dump() for spec in self._sim.faults.pending()])

    async def add_fault(self, request: web.Request) -> web.StreamResponse:
        """Queue a fault for the next ``count`` calls of ``method``."""
        spec = await _body(request, FaultSpec)
        self._sim.faults.add(spec)
        return web.json_response(spec.model_dump())

    async def clear_faults(self, request: web.Request) -> web.StreamResponse:
        """Drop the queued faults aimed at ``?chat_id=`` (all of them without it); answers
        ``{"ok": true, "dropped": [FaultSpec, ...]}``."""
        raw = request.query.get("chat_id")
        try:
            chat_id = None if raw is None else int(raw)
        except ValueError:
            return web.json_response({"error": "chat_id must be an integer"}, status=400)
        dropped = self._sim.faults.clear(chat_id)
        return web.json_response({"ok": True, "dropped": [spec.model_dump() for spec in dropped]})

    async def holds(self, request: web.Request) -> web.StreamResponse:
        """Flood holds in force."""
        return web.json_response(self._sim.holds.active())

    async def lift_holds(self, request: web.Request) -> web.StreamResponse:
        """Let the time of every flood hold pass."""
        return web.json_response({"lifted": self._sim.holds.lift()})

    async def limits(self, request: web.Request) -> web.StreamResponse:
        """The limits in force."""
        return web.json_response(self._sim.flood.limits.model_dump())

    async def set_limits(self, request: web.Request) -> web.StreamResponse:
        """Change some limits; buckets start full again."""
        changes = (await _body(request, LimitsIn)).model_dump(exclude_none=True)
        limits = Limits.model_validate({**self._sim.flood.limits.model_dump(), **changes})
        self._sim.flood.configure(limits)
        return web.json_response(limits.model_dump())
