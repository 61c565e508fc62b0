"""Guest-facing texts in Russian and English, chosen by the guest's Telegram ``language_code``.

The meaning of each text follows the spec's job outcomes (spec/002 "Job-level outcomes", spec/000 deadlines).
"""

from __future__ import annotations

from typing import Final

TEXTS: Final[dict[str, dict[str, str]]] = {
    "linked": {
        "en": "You're linked! Now take your selfie at the booth — your stickers will arrive right here.",
        "ru": "Готово, ты подключён! Сделай селфи на стойке — стикеры придут сюда.",
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


def language_of(language_code: str | None) -> str:
    """``ru`` for Russian-speaking Telegram clients (ru, uk, be, kk), else ``en``."""
    if language_code and language_code.split("-")[0].lower() in {"ru", "uk", "be", "kk"}:
        return "ru"
    return "en"


def text(key: str, language_code: str | None, **values: str) -> str:
    """The text ``key`` in the guest's language, formatted with ``values``.

    Raises:
        KeyError: unknown ``key``.
    """
    return TEXTS[key][language_of(language_code)].format(**values)
