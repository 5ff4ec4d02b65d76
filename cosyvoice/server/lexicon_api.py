"""The user lexicon over REST: ``GET/PUT/POST /api/v1/lexicon``, ``DELETE
/api/v1/lexicon/{word}``.

``GET`` → ``{"zh": {word: reading}, "en": {...}, "entries": [{"word", "reading", "lang"}]}``;
``PUT`` replaces the whole lexicon (same form, or ``{"entries": [...]}``); ``POST {"word",
"reading"}`` adds or changes one word (201); ``DELETE`` removes one (404 when absent).
Writes follow the saved voices' rule (no admin token) and the lexicon's file lock; a bad
reading is a 422 quoting it. The next synthesis uses the new readings.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from cosyvoice.frontend.lexicon import READING_MAX, WORD_MAX, Lexicon
from cosyvoice.server.errors import error_responses, read_json


class LexiconEntry(BaseModel):
    """``POST /api/v1/lexicon``: one word and its reading."""

    word: str = Field(min_length=1, max_length=WORD_MAX,
                      description="Chinese word or English word")
    reading: str = Field(min_length=1, max_length=READING_MAX, description=(
        "pinyin with tone numbers or marks (zhong4 yao4), or ARPAbet (T AH0 M EY1 T OW2)"))


def lexicon_body(lexicon: Lexicon) -> dict[str, Any]:
    return {**lexicon.to_dict(), "entries": lexicon.entries()}


def lexicon_router(lexicon: Lexicon) -> APIRouter:
    router = APIRouter(prefix="/api/v1/lexicon", tags=["lexicon"])

    @router.get("")
    def get_lexicon() -> dict:
        """Every word of the user lexicon and its reading."""
        return lexicon_body(lexicon)

    @router.put("", responses=error_responses(400, 413, 415, 422),
                openapi_extra={"requestBody": {"required": True, "content": {
                    "application/json": {"schema": {"type": "object", "description":
                        "{\"zh\": {word: reading}, \"en\": {...}} or {\"entries\": "
                        "[{\"word\", \"reading\"}, ...]}"}}}}})
    async def put_lexicon(request: Request) -> dict:
        """Replace the whole lexicon: every entry is checked (the limits of POST, at most
        5,000 words) before anything is written."""
        data = read_json(await request.body())  # unparsable or too deep: a 400
        await run_in_threadpool(lexicon.replace, data)
        return lexicon_body(lexicon)

    @router.post("", status_code=201, responses=error_responses(422))
    def add_entry(body: LexiconEntry) -> dict:
        """Add a word, or change its reading."""
        r = lexicon.put(body.word, body.reading)
        return {"word": r.word, "reading": r.text, "lang": r.lang}

    @router.delete("/{word}", responses=error_responses(404))
    def delete_entry(word: str) -> dict:
        """Remove a word from the lexicon."""
        lexicon.delete(word)
        return {"deleted": word}

    return router
