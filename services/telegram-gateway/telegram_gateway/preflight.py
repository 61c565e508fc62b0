"""The preflight's Telegram checks (:mod:`shared.preflight`): ``python -m telegram_gateway.preflight``
prints them as JSON lines; the admins' ``/preflight`` (:class:`PreflightCommand`) runs them live in the
gateway and shows the last full report stored by the runner.

Here because only the gateway holds the bot token and python-telegram-bot (``pyproject.toml`` import
rules). Every check calls the Bot API ``TELEGRAM_API_BASE_URL`` names: Telegram with a real token, the
simulator in dev. Nothing here reads updates: a ``getUpdates`` would take them from the running gateway.

- ``settings.telegram``: the gateway's settings and ``BOT_USERNAME`` load (a refused setting is a failed
  check naming the variable, not a traceback);
- ``telegram.bot_token``: ``getMe`` answers (401 ``Unauthorized`` is python-telegram-bot's
  ``InvalidToken``: the token is revoked or mistyped);
- ``telegram.bot_username``: ``getMe.username`` is ``BOT_USERNAME``, compared case-insensitively
  (Telegram usernames are case-insensitive, core.telegram.org/bots/api#user "username"): QR codes
  (``t.me/<bot>?start=``) and set names (``_by_<bot>``) are built from ``BOT_USERNAME``;
- ``telegram.updates`` (``TELEGRAM_UPDATES=webhook``: :func:`webhook_check`, the webhook is ours and
  Telegram delivers to it without errors); in polling mode ``getWebhookInfo.url`` is empty, because the
  gateway polls and ``getUpdates`` is
  refused with 409 while a webhook is set (core.telegram.org/bots/api#getupdates: "will not work if an
  outgoing webhook is set up"). One poller per token: another process polling the same token takes
  updates away and both see 409 ``terminated by other getUpdates request`` (not detectable from here
  without taking updates ourselves);
- ``telegram.staff_group`` (``LEADS_CHAT_ID``, when ``LEADS_ENABLED``) and ``telegram.admin_group``
  (``ADMIN_CHAT_ID``): ``getChat`` answers (a group the bot is not in is 400 ``chat not found``, one it
  was removed from 403) and ``getChatMember`` of the bot may post: ``creator``/``administrator``, a
  ``member`` of a group whose ``permissions.can_send_messages`` is not false, or a ``restricted`` member
  with ``is_member`` and ``can_send_messages`` (core.telegram.org/bots/api#chatmember);
- ``telegram.admins``: each of ``ADMIN_USER_IDS`` started the bot: ``getChat`` knows the chat and
  ``sendChatAction`` (``typing``, a few seconds' indicator, nothing stored) is not refused with 403
  ``bot can't initiate conversation with a user`` / ``bot was blocked by the user``;
- ``telegram.clock``: this machine's clock against the ``Date`` header of the Bot API's answer.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import sys
from datetime import UTC, datetime

import httpx
from telegram import Bot, Update, User, WebhookInfo
from telegram.constants import ChatAction, ChatMemberStatus, ChatType
from telegram.error import BadRequest, Forbidden, InvalidToken, TelegramError
from telegram.ext import Application, CommandHandler, ContextTypes, filters
from telegram.request import HTTPXRequest

from shared.bot_identity import bot_mismatch
from shared.errors import ConfigError
from shared.preflight import CheckResult, PreflightSettings, Report, emit, fail, ok, skip, warn
from shared.preflight.reports import stored_report
from shared.repositories import Database
from shared.settings import load_settings
from telegram_gateway.settings import GatewaySettings

#: Seconds one Bot API call of the preflight may take.
CALL_TIMEOUT_S = 15.0


def _why(exc: TelegramError) -> str:
    return exc.message if exc.message else type(exc).__name__


async def identity_checks(bot: Bot, bot_username: str) -> tuple[list[CheckResult], User | None]:
    """``telegram.bot_token`` and ``telegram.bot_username``; the bot's ``User`` when the token works."""
    try:
        me = await bot.get_me(read_timeout=CALL_TIMEOUT_S)
    except InvalidToken:
        return [
            fail(
                "telegram.bot_token",
                "the Bot API refuses TELEGRAM_BOT_TOKEN (401 Unauthorized)",
                "copy the token again from @BotFather (/mybots → API Token); it changes when revoked",
            )
        ], None
    except TelegramError as exc:
        return [
            fail(
                "telegram.bot_token",
                f"getMe failed: {_why(exc)}",
                "check TELEGRAM_API_BASE_URL and that this host reaches it (firewall, proxy, DNS)",
            )
        ], None
    results = [ok("telegram.bot_token", f"getMe: @{me.username} (id {me.id})")]
    mismatch = bot_mismatch(bot_username, me.username)
    if mismatch is not None:
        results.append(
            fail(
                "telegram.bot_username",
                mismatch,
                f"set BOT_USERNAME={me.username}, or use the token of @{bot_username}",
            )
        )
    else:
        results.append(ok("telegram.bot_username", f"BOT_USERNAME matches getMe (@{me.username})"))
    return results, me


async def updates_check(bot: Bot, settings: GatewaySettings | None = None) -> CheckResult:
    """``telegram.updates``: in polling mode no webhook, so the gateway's ``getUpdates`` receives the
    updates; in webhook mode (``TELEGRAM_UPDATES=webhook``) :func:`webhook_check`."""
    try:
        info = await bot.get_webhook_info(read_timeout=CALL_TIMEOUT_S)
    except TelegramError as exc:
        return fail("telegram.updates", f"getWebhookInfo failed: {_why(exc)}", "see telegram.bot_token")
    if settings is not None and settings.telegram_updates == "webhook":
        return webhook_check(info, settings.webhook_url)
    if info.url:
        return fail(
            "telegram.updates",
            f"a webhook is set ({info.url}): the gateway polls, and getUpdates is refused (409) while "
            "a webhook is set; no guest's /start would arrive",
            "delete it (Bot API deleteWebhook; another deployment using this token set it: stop that one)",
        )
    return ok(
        "telegram.updates",
        f"polling: no webhook; {info.pending_update_count} update(s) waiting (one poller per token: "
        "another process polling it would take updates away)",
    )


def webhook_check(info: WebhookInfo, url: str) -> CheckResult:
    """``telegram.updates`` in webhook mode: ``getWebhookInfo.url`` is ``TELEGRAM_WEBHOOK_URL`` (the leading
    gateway sets it), and Telegram is not failing to deliver: a ``last_error_date`` while updates wait
    (``pending_update_count``) means our route is unreachable or answers non-2xx, and guests wait."""
    if not info.url:
        return fail(
            "telegram.updates",
            "webhook mode, but no webhook is set: no update reaches the gateway",
            "start the gateway (its leader calls setWebhook) and see its WEBHOOK_NOT_SET log lines",
        )
    if info.url != url:
        return fail(
            "telegram.updates",
            f"a webhook to another URL is set ({info.url}), not TELEGRAM_WEBHOOK_URL ({url})",
            "another deployment uses this token: stop it; the leading gateway sets ours at its start",
        )
    waiting = info.pending_update_count
    if info.last_error_date is not None and waiting:
        return fail(
            "telegram.updates",
            f"Telegram cannot deliver to the webhook: {info.last_error_message} "
            f"(at {info.last_error_date:%H:%M:%S} UTC; {waiting} update(s) waiting)",
            "check the ingress, its TLS certificate and the gateway's webhook port; the gateway answers "
            "401 to a wrong TELEGRAM_WEBHOOK_SECRET and 503 while Postgres is unreachable",
        )
    return ok(
        "telegram.updates",
        f"webhook: {info.url}, max_connections {info.max_connections}; {waiting} update(s) waiting"
        + (f"; last error {info.last_error_message} (delivered since)" if info.last_error_date else ""),
    )


async def group_check(bot: Bot, me: User, name: str, chat_id: int, setting: str) -> CheckResult:
    """The bot is in group ``chat_id`` and may post there."""
    add = f"add @{me.username} to the group and let members send messages, or correct {setting}"
    try:
        chat = await bot.get_chat(chat_id, read_timeout=CALL_TIMEOUT_S)
        member = await bot.get_chat_member(chat_id, me.id, read_timeout=CALL_TIMEOUT_S)
    except (BadRequest, Forbidden) as exc:
        return fail(name, f"{setting}={chat_id}: {_why(exc)}: the bot is not in that group", add)
    except TelegramError as exc:
        return fail(name, f"{setting}={chat_id}: {_why(exc)}", "see telegram.bot_token")
    if chat.type == ChatType.PRIVATE or chat.type == ChatType.CHANNEL:
        return fail(
            name, f"{setting}={chat_id} is a {chat.type} chat, not a group", f"set {setting} to a group"
        )
    status = member.status
    permissions = chat.permissions
    may_post = (
        status in (ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR)
        or (
            status == ChatMemberStatus.MEMBER
            and (permissions is None or permissions.can_send_messages is not False)
        )
        or (
            status == ChatMemberStatus.RESTRICTED
            and bool(getattr(member, "is_member", False))
            and bool(getattr(member, "can_send_messages", False))
        )
    )
    title = chat.title or chat_id
    if not may_post:
        return fail(name, f"{setting}={chat_id} ({title}): the bot is {status} and may not post there", add)
    return ok(name, f"{title}: the bot is {status} and may post")


async def admins_check(bot: Bot, admin_ids: frozenset[int], bot_username: str) -> CheckResult:
    """``telegram.admins``: every admin's private chat with the bot is open."""
    if not admin_ids:
        return warn(
            "telegram.admins",
            "ADMIN_USER_IDS is empty: nobody can /pause, /resume or /status",
            "set ADMIN_USER_IDS to the staff's Telegram user ids",
        )
    unreachable = []
    for admin in sorted(admin_ids):
        try:
            await bot.get_chat(admin, read_timeout=CALL_TIMEOUT_S)
            await bot.send_chat_action(admin, ChatAction.TYPING, read_timeout=CALL_TIMEOUT_S)
        except (BadRequest, Forbidden) as exc:
            unreachable.append(f"{admin} ({_why(exc)})")
        except TelegramError as exc:
            unreachable.append(f"{admin} ({_why(exc)})")
    if unreachable:
        return fail(
            "telegram.admins",
            f"the bot cannot write to {len(unreachable)} of {len(admin_ids)} admin(s): "
            + ", ".join(unreachable),
            f"each of them opens t.me/{bot_username} and presses Start (or unblocks the bot)",
        )
    return ok("telegram.admins", f"all {len(admin_ids)} admin(s) started the bot")


async def clock_check(base_url: str, token: str, max_skew_s: float) -> CheckResult:
    """``telegram.clock``: the ``Date`` header of a ``getMe`` answer against this machine's clock."""
    try:
        async with httpx.AsyncClient(timeout=CALL_TIMEOUT_S) as client:
            response = await client.get(f"{base_url.rstrip('/')}/bot{token}/getMe")
        stamp = response.headers.get("date")
        remote = email.utils.parsedate_to_datetime(stamp) if stamp else None
    except (httpx.HTTPError, ValueError, TypeError) as exc:
        return fail(
            "telegram.clock", f"no Date from the Bot API: {type(exc).__name__}", "see telegram.bot_token"
        )
    if remote is None:
        return skip("telegram.clock", "the Bot API's answer has no Date header")
    skew = (datetime.now(UTC) - remote).total_seconds()
    if abs(skew) > max_skew_s + 1:  # the header has whole seconds
        return fail(
            "telegram.clock",
            f"this machine's clock is {skew:+.0f} s off Telegram's (limit {max_skew_s:g} s)",
            "synchronise the clock (NTP: timedatectl set-ntp true)",
        )
    return ok("telegram.clock", f"{skew:+.0f} s from the Bot API's Date")


async def telegram_checks(
    bot: Bot, settings: GatewaySettings, bot_username: str, *, max_skew_s: float
) -> list[CheckResult]:
    """Every Telegram check with ``bot`` (initialised or not), in the order the operator reads them."""
    results, me = await identity_checks(bot, bot_username)
    if me is None:
        return results
    results.append(await updates_check(bot, settings))
    if settings.leads_enabled and settings.leads_chat_id is not None:
        results.append(
            await group_check(bot, me, "telegram.staff_group", settings.leads_chat_id, "LEADS_CHAT_ID")
        )
    elif settings.leads_enabled:
        results.append(
            fail(
                "telegram.staff_group",
                "LEADS_ENABLED but LEADS_CHAT_ID is not set: lead cards have nowhere to go",
                "set LEADS_CHAT_ID to the staff group's id, or LEADS_ENABLED=0",
            )
        )
    if settings.admin_chat_id is not None:
        results.append(
            await group_check(bot, me, "telegram.admin_group", settings.admin_chat_id, "ADMIN_CHAT_ID")
        )
    else:
        results.append(
            skip(
                "telegram.admin_group",
                "ADMIN_CHAT_ID is not set: alerts are only logged",
                "set ADMIN_CHAT_ID to a group of the staff with the bot in it to get alerts in Telegram",
            )
        )
    results.append(await admins_check(bot, settings.admin_ids, me.username or bot_username))
    token = settings.telegram_bot_token.get_secret_value()
    results.append(await clock_check(settings.telegram_api_base_url, token, max_skew_s))
    return results


def _settings() -> tuple[GatewaySettings, str, float] | CheckResult:
    try:
        settings = load_settings(GatewaySettings)
        max_skew = load_settings(PreflightSettings).preflight_max_clock_skew_sec
    except ConfigError as exc:
        return fail("settings.telegram", f"invalid settings: {exc}", "correct the named variables")
    return settings, settings.bot_username, max_skew


async def run_checks() -> list[CheckResult]:
    loaded = _settings()
    if isinstance(loaded, CheckResult):
        return [loaded]
    settings, bot_username, max_skew = loaded
    base = settings.telegram_api_base_url.rstrip("/")
    # Our own connection pools, closed here: the Bot is never initialised (that would call getMe outside
    # the checks), and Bot.shutdown closes nothing then.
    requests = (HTTPXRequest(), HTTPXRequest())
    bot = Bot(
        settings.telegram_bot_token.get_secret_value(),
        base_url=f"{base}/bot",
        base_file_url=f"{base}/file/bot",
        request=requests[0],
        get_updates_request=requests[1],
    )
    try:
        return await telegram_checks(bot, settings, bot_username, max_skew_s=max_skew)
    finally:
        for request in requests:
            await request.shutdown()


def _age(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def reply_text(live: list[CheckResult], report: Report | None, now: datetime | None = None) -> str:
    """``/preflight``'s answer: the live Telegram checks, then the last full report and its age."""
    marks = {"ok": "✅", "warn": "⚠️", "skip": "➖", "fail": "❌"}
    lines = ["Telegram, now:"]
    for r in live:
        lines.append(f"{marks[r.status]} {r.name}: {r.detail}")
        if r.status in ("fail", "warn") and r.fix:
            lines.append(f"   → {r.fix}")
    if report is None:
        lines.append("No full preflight stored yet: run make preflight (or the preflight Job).")
        return "\n".join(lines)
    verdict = "READY" if report.ok else "NOT READY"
    lines.append(f"Last full preflight: {verdict}, {_age(report.age_s(now))} ago ({report.source}).")
    for r in report.results:
        if r.status in ("fail", "warn"):
            lines.append(f"{marks[r.status]} {r.name}: {r.detail}")
    return "\n".join(lines)


class PreflightCommand:
    """``/preflight`` for ``ADMIN_USER_IDS`` in their private chat with the bot."""

    def __init__(self, *, db: Database, settings: GatewaySettings) -> None:
        self.db = db
        self.settings = settings

    def register(self, app: Application) -> None:
        admins = filters.ChatType.PRIVATE & filters.User(user_id=self.settings.admin_ids or {0})
        app.add_handler(CommandHandler("preflight", self.show, filters=admins))

    async def show(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        loaded = _settings()
        if isinstance(loaded, CheckResult):
            live = [loaded]
        else:
            _, bot_username, max_skew = loaded
            live = await telegram_checks(context.bot, self.settings, bot_username, max_skew_s=max_skew)
        try:
            report = await stored_report(self.db)
        except Exception:
            report = None
        if update.effective_message:
            await update.effective_message.reply_text(reply_text(live, report))


def main() -> int:
    os.environ.setdefault("PTB_TIMEDELTA", "1")
    return emit(asyncio.run(run_checks()))


if __name__ == "__main__":
    sys.exit(main())
