"""``GET /``: a server-rendered page to watch the simulator (chats as bubbles with their buttons, sticker
sets on a checkerboard so transparency shows, the latest Bot API calls). A few lines of script re-fetch
``/?fragment=1`` every 1.5 s and swap the content in place; no JS framework.
"""

from __future__ import annotations

import time
from html import escape
from typing import Any

from aiohttp import web

from simulators.telegram.simulator import Simulator
from simulators.telegram.state import ChatRecord, MessageRecord, StickerSetRecord

MESSAGES_PER_CHAT = 60
CALLS_SHOWN = 20

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#e7ebf0;color:#1c1c1c}
header{background:#517da2;color:#fff;padding:10px 18px}header b{font-size:16px}
main{padding:14px 18px}h2{margin:18px 0 8px;font-size:15px;color:#3a5a78}
.grid{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
.chat{background:#fff;border-radius:10px;width:380px;box-shadow:0 1px 2px #0002}
.chat h3{margin:0;padding:8px 12px;font-size:14px;border-bottom:1px solid #eee}
.chat h3 small{color:#888;font-weight:normal}
.msgs{padding:8px;background:#dfe7ee;border-radius:0 0 10px 10px;display:flex;flex-direction:column;gap:6px}
.msg{max-width:85%;padding:6px 9px;border-radius:10px;white-space:pre-wrap;word-wrap:break-word}
.in{background:#fff;align-self:flex-start}.out{background:#effdde;align-self:flex-end}
.meta{font-size:11px;color:#8a8a8a;margin-top:2px}.who{font-size:12px;color:#3a7bd5;font-weight:600}
.quote{border-left:3px solid #3a7bd5;padding-left:6px;color:#555;font-size:12px;margin-bottom:3px}
.kb{display:grid;gap:3px;margin-top:5px}.row{display:flex;gap:3px}
.btn{flex:1;background:#5e8fb8;color:#fff;border-radius:6px;padding:4px 6px;text-align:center;font-size:12px}
.chk{background-color:#fff;background-image:linear-gradient(45deg,#ccc 25%,transparent 25%),
linear-gradient(-45deg,#ccc 25%,transparent 25%),linear-gradient(45deg,transparent 75%,#ccc 75%),
linear-gradient(-45deg,transparent 75%,#ccc 75%);background-size:16px 16px;
background-position:0 0,0 8px,8px -8px,-8px 0}
.msg img{max-width:160px;display:block;border-radius:6px}
.set{background:#fff;border-radius:10px;padding:10px 12px;box-shadow:0 1px 2px #0002;max-width:820px}
.stickers{display:flex;flex-wrap:wrap;gap:8px}.st{text-align:center;font-size:18px}
.st img{width:128px;height:128px;object-fit:contain;display:block;border-radius:6px}
table{border-collapse:collapse;background:#fff;font-size:12px}
td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}.bad{color:#c0392b}.empty{color:#777}
"""

_SCRIPT = """
let last='';
async function refresh(){
  try{const r=await fetch('/?fragment=1',{cache:'no-store'});const t=await r.text();
      if(t!==last){last=t;document.getElementById('live').innerHTML=t;}}catch(e){}
  setTimeout(refresh,1500);
}
setTimeout(refresh,1500);
"""


def _clock(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(timestamp))


def _button(button: dict[str, Any]) -> str:
    target = str(button.get("callback_data") or button.get("url") or "")
    return f"<span class='btn' title='{escape(target)}'>{escape(str(button.get('text', '')))}</span>"


class WatchPage:
    """Renders the simulator's state as HTML."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Register ``GET /``."""
        router.add_get("/", self.handle)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """The whole page, or only its live part with ``?fragment=1``."""
        live = self.render_live()
        if request.query.get("fragment"):
            return web.Response(text=live, content_type="text/html")
        config = self._sim.config
        page = (
            "<!doctype html><html><head><meta charset='utf-8'><title>Telegram simulator</title>"
            f"<style>{_STYLE}</style></head><body><header><b>Telegram simulator</b> &nbsp; "
            f"@{escape(config.bot_username)} (bot id {config.bot_id})</header>"
            f"<main id='live'>{live}</main><script>{_SCRIPT}</script></body></html>"
        )
        return web.Response(text=page, content_type="text/html")

    def render_live(self) -> str:
        """Chats, sticker sets and recent calls."""
        state = self._sim.state
        chats = "".join(self._chat(chat) for chat in reversed(list(state.chats.values())))
        sets = "".join(self._sticker_set(record) for record in state.sticker_sets.values())
        return (
            f"<h2>Chats ({len(state.chats)}) · pending updates: {len(state.updates)}</h2>"
            f"<div class='grid'>{chats or '<p class=empty>No chats yet.</p>'}</div>"
            f"<h2>Sticker sets ({len(state.sticker_sets)})</h2>"
            f"<div class='grid'>{sets or '<p class=empty>No sticker sets yet.</p>'}</div>"
            f"<h2>Latest Bot API calls</h2>{self._calls()}"
        )

    def _chat(self, chat: ChatRecord) -> str:
        state = self._sim.state
        user = state.users.get(chat.id)
        if chat.type == "private":
            name = user.first_name if user else str(chat.id)
            handle = f" @{user.username}" if user and user.username else ""
            status = "blocked the bot" if chat.blocked else ("started" if chat.started else "not started")
            title = f"{escape(name)}<small>{escape(handle)} · {chat.id} · {status}</small>"
        else:
            title = f"{escape(chat.title or 'Group')}<small> · {chat.type} {chat.id}</small>"
        messages = list(state.messages.get(chat.id, {}).values())[-MESSAGES_PER_CHAT:]
        bubbles = "".join(self._message(chat, record) for record in messages)
        return f"<section class='chat'><h3>{title}</h3><div class='msgs'>{bubbles}</div></section>"

    def _message(self, chat: ChatRecord, record: MessageRecord) -> str:
        state = self._sim.state
        parts: list[str] = []
        if chat.type != "private" and not record.from_bot:
            sender = state.users.get(record.sender_id)
            parts.append(
                f"<div class='who'>{escape(sender.first_name if sender else str(record.sender_id))}</div>"
            )
        if record.reply_to_message_id is not None:
            replied = state.messages.get(chat.id, {}).get(record.reply_to_message_id)
            quoted = (replied.text or replied.caption or "[media]") if replied else "[deleted]"
            parts.append(f"<div class='quote'>{escape(quoted[:80])}</div>")
        for file_id in (record.sticker_file_id, record.photo_file_id):
            if file_id:
                parts.append(f"<img class='chk' src='/sim/files/{escape(file_id)}' alt=''>")
        if record.text:
            parts.append(escape(record.text))
        if record.caption:
            parts.append(escape(record.caption))
        rows = (record.reply_markup or {}).get("inline_keyboard") or []
        if rows:
            rendered = "".join(
                "<div class='row'>"
                + "".join(_button(button) for button in row if isinstance(button, dict))
                + "</div>"
                for row in rows
                if isinstance(row, list)
            )
            parts.append(f"<div class='kb'>{rendered}</div>")
        edited = " · edited" if record.edit_date else ""
        parts.append(f"<div class='meta'>#{record.message_id} · {_clock(record.date)}{edited}</div>")
        direction = "out" if record.from_bot else "in"
        return f"<div class='msg {direction}'>{''.join(parts)}</div>"

    def _sticker_set(self, record: StickerSetRecord) -> str:
        stickers = "".join(
            f"<div class='st'><img class='chk' src='/sim/files/{escape(item.file_id)}' alt=''>"
            f"{escape(''.join(item.emoji_list))}</div>"
            for item in record.stickers
        )
        return (
            f"<section class='set'><b>{escape(record.title)}</b> — t.me/addstickers/{escape(record.name)} "
            f"<small>(owner {record.owner_user_id}, {len(record.stickers)} stickers)</small>"
            f"<div class='stickers'>{stickers}</div></section>"
        )

    def _calls(self) -> str:
        records = self._sim.calls.select()[-CALLS_SHOWN:]
        if not records:
            return "<p class='empty'>No calls yet.</p>"
        rows = []
        for record in reversed(records):
            outcome = "ok" if record.ok else f"{record.error_code} {record.description or ''}"
            if record.fault:
                outcome += f" [fault: {record.fault}]"
            css = "" if record.ok else "bad"
            rows.append(
                f"<tr><td>{_clock(record.at)}</td><td>{escape(record.method)}</td>"
                f"<td class='{css}'>{escape(outcome)}</td></tr>"
            )
        return f"<table><tr><th>time (UTC)</th><th>method</th><th>outcome</th></tr>{''.join(rows)}</table>"
