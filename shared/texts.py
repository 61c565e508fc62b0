"""Guest-facing texts in Russian and English, chosen by the guest's Telegram ``language_code``
(:func:`language_of` maps every code to one of the two).

The meaning of each text follows the spec's job outcomes (spec/002 "Job-level outcomes", spec/000 deadlines).
"""

from __future__ import annotations

from typing import Final

TEXTS: Final[dict[str, dict[str, str]]] = {
    "linked": {
        "en": "You're linked! Now take your selfie at the booth — your stickers will arrive right here.",
        "ru": "Готово, ты подключён! Сделай селфи на стойке — стикеры придут сюда.",
    },
    "unlinked": {
        "en": "The sticker booth was unlinked from your Telegram: someone at the booth pressed "
        '"Not you?". If that was you, scan the QR code on the booth screen again.',
        "ru": "Стойку со стикерами отвязали от твоего Telegram: кто-то у стойки нажал «Не ты?». "
        "Если это был ты, отсканируй QR-код на экране стойки ещё раз.",
    },
    "unknown_token": {
        "en": "This code has expired or was already used. Scan the QR code on the booth screen again.",
        "ru": "Этот код устарел или уже использован. Отсканируй QR-код на экране стойки ещё раз.",
    },
    "hello": {
        "en": "Hi! Scan the QR code at the sticker booth to get your own sticker pack.",
        "ru": "Привет! Отсканируй QR-код на стойке, чтобы получить свой набор стикеров.",
    },
    "generating": {
        "en": "Generating your sticker pack… It takes a few minutes, we'll send the link here.",
        "ru": "Генерируем твой набор стикеров… Это займёт несколько минут, ссылка придёт сюда.",
    },
    "still_working": {
        "en": "Still working on your stickers — almost there!",
        "ru": "Всё ещё рисуем твои стикеры — почти готово!",
    },
    "pack_ready": {
        "en": "Your sticker pack is ready! Tap to add it: {link}",
        "ru": "Твой набор стикеров готов! Нажми, чтобы добавить: {link}",
    },
    # the link sent after the 15-minute deadline (a Telegram flood wait held it; the set was complete):
    # no failure text went out, the guest only waited longer (issue 19)
    "pack_ready_late": {
        "en": "Sorry for the wait — your sticker pack is ready! Tap to add it: {link}",
        "ru": "Прости, что пришлось подождать — твой набор стикеров готов! Нажми, чтобы добавить: {link}",
    },
    # the link of a job whose failure text went out before (an admin retry of a job failed at the
    # deadline): it says so, never as if nothing had been said (issue 19)
    "pack_ready_after_failure": {
        "en": "We wrote earlier that something went wrong, but your sticker pack made it after all — "
        "sorry for the confusion and the wait! Tap to add it: {link}",
        "ru": "Раньше мы написали, что что-то пошло не так, но твой набор стикеров всё-таки готов — "
        "прости за путаницу и ожидание! Нажми, чтобы добавить: {link}",
    },
    "add_stickers": {"en": "Add stickers", "ru": "Добавить стикеры"},
    "download_files": {"en": "Download the files", "ru": "Скачать файлы"},
    "help": {
        "en": "How to get your own sticker pack:\n"
        "1. At the sticker booth, scan the QR code on the screen and press Start here.\n"
        "2. Pick an outfit on the booth screen.\n"
        "3. Take a selfie at the booth.\n"
        "A few minutes later the link to your 12 stickers arrives in this chat.\n\n"
        "/delete — delete your photo, stickers and everything we keep about you\n"
        "/help — this message",
        "ru": "Как получить свой набор стикеров:\n"
        "1. На стойке со стикерами отсканируй QR-код на экране и нажми здесь «Старт».\n"
        "2. Выбери образ на экране стойки.\n"
        "3. Сделай селфи на стойке.\n"
        "Через несколько минут ссылка на твои 12 стикеров придёт в этот чат.\n\n"
        "/delete — удалить фото, стикеры и всё, что мы о тебе храним\n"
        "/help — это сообщение",
    },
    "help_admin": {
        "en": "Admin commands:\n"
        "/status — the queue: jobs by status, the pause in force\n"
        "/pause — stop starting new jobs (running ones finish; kiosks show the break screen)\n"
        "/resume — end an admin or automatic pause; offers to retry jobs that missed their deadline\n"
        "/help — this message\n\n"
        "Guests see: scan the booth's QR code, press Start, take a selfie, get the link here; "
        "/delete erases their data.",
        "ru": "Команды администратора:\n"
        "/status — очередь: задания по статусам, действующая пауза\n"
        "/pause — не запускать новые задания (текущие доработают; на стойках экран перерыва)\n"
        "/resume — снять паузу (админскую или автоматическую); предложит повторить задания, "
        "пропустившие срок\n"
        "/help — это сообщение\n\n"
        "Гости видят: QR-код на стойке, «Старт», селфи, ссылка приходит сюда; /delete удаляет их данные.",
    },
    "failed": {
        "en": "Something went wrong with your sticker pack. Our team will help you manually — "
        "find us at the booth.",
        "ru": "Что-то пошло не так с генерацией твоего набора. Мы поможем вручную — подойди к стойке.",
    },
    "unavailable": {
        "en": "Generation is temporarily unavailable. Your photo is saved — "
        "we'll make your pack as soon as we can.",
        "ru": "Генерация временно недоступна. Твоё фото сохранено — сделаем набор, как только сможем.",
    },
    "maintenance": {
        "en": "The sticker booth is taking a short break. Please try again in a few minutes.",
        "ru": "Стойка со стикерами на короткой паузе. Попробуй, пожалуйста, через несколько минут.",
    },
    "no_face": {
        "en": "We couldn't find a face in your photo. Please take another selfie at the booth.",
        "ru": "Не получилось найти лицо на фото. Сделай, пожалуйста, ещё одно селфи на стойке.",
    },
    "content_refused": {
        "en": "We couldn't turn this photo into stickers. Please take another selfie at the booth — "
        "a clear, well-lit photo of your face works best.",
        "ru": "Не получилось сделать стикеры из этого фото. Сделай, пожалуйста, другое селфи на стойке — "
        "лучше всего подходит чёткое фото лица при хорошем свете.",
    },
    # The same two cases on the session's last allowed photo (MAX_CAPTURES_PER_SESSION): no other selfie
    # can be taken, so the guest is sent to the staff instead (the kiosk shows these words too).
    "no_face_last": {
        "en": "We couldn't find a face in your photo. That was the last photo of this visit — "
        "our staff at the booth will help you.",
        "ru": "Не получилось найти лицо на фото. Это было последнее фото за этот визит — "
        "сотрудники у стойки тебе помогут.",
    },
    "content_refused_last": {
        "en": "We couldn't turn this photo into stickers. That was the last photo of this visit — "
        "our staff at the booth will help you.",
        "ru": "Не получилось сделать стикеры из этого фото. Это было последнее фото за этот визит — "
        "сотрудники у стойки тебе помогут.",
    },
    "erase_confirm": {
        "en": "Delete everything we keep about you? Your sticker packs from the booth, your photos and your "
        "history with this bot will be deleted for good. This cannot be undone.",
        "ru": "Удалить всё, что мы о тебе храним? Твои наборы стикеров со стойки, фото и историю с этим "
        "ботом удалим навсегда. Отменить это нельзя.",
    },
    "erase_yes": {"en": "Delete everything", "ru": "Удалить всё"},
    "erase_no": {"en": "Cancel", "ru": "Отмена"},
    "erase_done": {
        "en": "Deleted. Your sticker packs, photos and everything we stored about you are gone.",
        "ru": "Удалено. Твоих наборов стикеров, фото и всего, что мы о тебе хранили, больше нет.",
    },
    "erase_cancelled": {
        "en": "Cancelled — nothing was deleted.",
        "ru": "Отменено — ничего не удалено.",
    },
    "erase_nothing": {
        "en": "We don't have anything stored about you.",
        "ru": "У нас ничего о тебе не хранится.",
    },
}

PACK_TITLE: Final[dict[str, str]] = {"en": "My Sticker Booth pack", "ru": "Мои стикеры"}

#: The bot's command menu (``setMyCommands``, :mod:`telegram_gateway.menu`): each command's description
#: in English and Russian (Bot API BotCommand: 1-256 characters). ``/start`` is left out: Telegram's own
#: Start button and the booth's QR code send it. The guests' commands are those every private chat
#: answers (:mod:`telegram_gateway.handlers`, :mod:`telegram_gateway.erasure`); the admins' extra ones
#: answer only ``ADMIN_USER_IDS`` (:mod:`telegram_gateway.admin`).
GUEST_COMMANDS: Final[dict[str, dict[str, str]]] = {
    "help": {"en": "How to get your sticker pack", "ru": "Как получить свой набор стикеров"},
    "delete": {
        "en": "Delete your photo, stickers and everything we keep about you",
        "ru": "Удалить фото, стикеры и всё, что мы о тебе храним",
    },
}
ADMIN_COMMANDS: Final[dict[str, dict[str, str]]] = {
    "status": {
        "en": "The queue: jobs by status, failures, spend, the pause",
        "ru": "Очередь: задания по статусам, сбои, расходы, пауза",
    },
    "pause": {"en": "Stop starting new jobs", "ru": "Не запускать новые задания"},
    "resume": {"en": "End the pause", "ru": "Снять паузу"},
    "preflight": {
        "en": "Will tonight work? Telegram checked now, the last full preflight",
        "ru": "Всё ли готово? Проверка Telegram сейчас и последний полный предполётный отчёт",
    },
}


#: Telegram ``language_code`` primary subtags (ISO 639-1, or 639-3 where there is none) answered in Russian:
#: languages whose speakers, as a group, read Russian more readily than English. Every other code, and
#: none at all, is answered in English. Reasoning, by group:
#:
#: - ``ru``; ``uk`` and ``be``: East Slavic, mutually intelligible enough to read Russian, which nearly all
#:   speakers also learnt at school (a Ukrainian client who prefers English can switch the app to English);
#: - ``kk``, ``ky``, ``uz``, ``tg``, ``tk``: Central Asia, where Russian is an official or the main second
#:   language (media, higher education) and English is far less widespread;
#: - ``hy``, ``az``: the South Caucasus states where Russian is still the usual second language
#:   (Russian-language schools, media), ahead of English in every age group;
#: - ``tt``, ``ba``, ``cv``, ``ce``, ``os``, ``sah``, ``av``, ``ab``: languages of Russia's republics (and
#:   Abkhazia), whose speakers are practically all bilingual in Russian.
#:
#: Left out on purpose: ``ka`` (Georgian; the guests of an evening event are mostly under 35, and that age
#: group reads English ahead of Russian), ``mn``, ``ro`` and the Baltic ``lv``, ``lt``, ``et`` (English is
#: the second language of the young; Russian speakers there set their client to ``ru`` anyway).
RUSSIAN_READERS: Final[frozenset[str]] = frozenset(
    {
        "ru",
        "uk",
        "be",
        "kk",
        "ky",
        "uz",
        "tg",
        "tk",
        "hy",
        "az",
        "tt",
        "ba",
        "cv",
        "ce",
        "os",
        "sah",
        "av",
        "ab",
    }
)


def language_of(language_code: str | None) -> str:
    """The guest's text language for a Telegram ``language_code`` (an IETF tag such as ``ru``, ``uk``,
    ``en-US``, ``pt-br``; ``None`` when the client sends none): ``ru`` when its primary subtag is in
    :data:`RUSSIAN_READERS`, else ``en``. Case and region (``-``/``_``) are ignored; never raises."""
    if not language_code:
        return "en"
    primary = language_code.replace("_", "-").split("-")[0].strip().lower()
    return "ru" if primary in RUSSIAN_READERS else "en"


def text(key: str, language_code: str | None, **values: str) -> str:
    """The text ``key`` in the guest's language, formatted with ``values``.

    Raises:
        KeyError: unknown ``key``.
    """
    return TEXTS[key][language_of(language_code)].format(**values)
