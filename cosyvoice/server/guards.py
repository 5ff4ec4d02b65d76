"""The request guards every app of this server installs (the Gradio app and the Ray Serve
ingress): the origin check (:mod:`cosyvoice.server.origin_guard`) and the body rules of its
routes (:mod:`cosyvoice.server.body_guard`), derived from the settings here in one table.

The limits: a JSON body may hold its longest valid content with every character written as
``\\uXXXX`` (6 bytes), plus 64 KB for keys and spacing, and at least 256 KB — so that a text
somewhat over ``--max-text-chars`` still reaches the text check, whose message says by how
much, while a body far over it is cut off; an upload (a multipart form), ``--max-upload-mb``
plus 64 KB for its other fields. A route not in the table takes a small JSON body (admin
actions, renames); the Gradio routes take uploads (``/gradio_api/upload``) and the largest
JSON body of any UI event (a full lexicon, a dialogue script).
"""

from __future__ import annotations

from fastapi import FastAPI

from cosyvoice.frontend.lexicon import MAX_ENTRIES, READING_MAX, WORD_MAX
from cosyvoice.server.body_guard import BodyGuard, BodyRule, Limit
from cosyvoice.server.origin_guard import OriginGuard
from cosyvoice.voice.transfer import MAX_FILE_BYTES as VOICE_FILE_BYTES

KB = 1024
JSON_BYTES_PER_CHAR = 6  # a character escaped as \uXXXX
JSON_SLACK = 64 * KB  # keys, punctuation, spacing, ignored fields
JSON_FLOOR = 256 * KB  # the least any JSON route takes
FORM_SLACK = 64 * KB  # an upload's other form fields and part headers
# The other text fields of a synthesis body: instruction (1000), prompt_text (500), voice,
# engine, mode.
SYNTHESIS_FIELD_CHARS = 2000
DIALOGUE_FIELD_CHARS = 200  # a dialogue body's fields beside the script
LEXICON_ENTRY_CHARS = WORD_MAX + READING_MAX + 40  # a word, its reading, keys and commas
API_PREFIXES = ("/api/", "/v1/", "/admin/", "/health/")


def json_limit(chars: int, what: str) -> Limit:
    size = chars * JSON_BYTES_PER_CHAR + JSON_SLACK
    if size <= JSON_FLOOR:
        return Limit(JSON_FLOOR, f"{JSON_FLOOR // KB} KB")
    shown = f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size / KB:.0f} KB"
    return Limit(size, f"{shown} ({what})")


def body_rules(settings) -> tuple[dict[tuple[str, str], BodyRule], BodyRule, BodyRule]:
    """(rules by (method, path), the rule of other API routes, the rule of Gradio's)."""
    mb = settings.max_upload_mb
    upload = Limit(int(mb * 2**20) + FORM_SLACK, f"{mb:g} MB (--max-upload-mb)")
    synthesis = json_limit(settings.max_text_chars + SYNTHESIS_FIELD_CHARS,
                           "from --max-text-chars")
    dialogue = json_limit(settings.dialogue_max_chars + DIALOGUE_FIELD_CHARS,
                          "from --dialogue-max-chars")
    lexicon = json_limit(MAX_ENTRIES * LEXICON_ENTRY_CHARS,
                         f"{MAX_ENTRIES} lexicon words of the longest")
    small = json_limit(0, "a small JSON object")
    voice_file = Limit(VOICE_FILE_BYTES + FORM_SLACK, f"{VOICE_FILE_BYTES // 2**20} MB (a "
                       "voice file)")
    routes = {
        ("POST", "/api/v1/tts"): BodyRule(json=synthesis, form=upload),
        ("POST", "/v1/audio/speech"): BodyRule(json=synthesis),
        ("POST", "/api/v1/dialogue"): BodyRule(json=dialogue),
        ("POST", "/api/v1/jobs"): BodyRule(json=upload, form=upload),
        ("POST", "/api/v1/voices"): BodyRule(json=small, form=upload),
        ("POST", "/api/v1/voices/fit"): BodyRule(form=upload),
        ("POST", "/api/v1/voices/import"): BodyRule(form=voice_file),
        ("POST", "/api/v1/transcribe"): BodyRule(form=upload),
        ("PUT", "/api/v1/lexicon"): BodyRule(json=lexicon),
    }
    largest = max(synthesis.bytes, dialogue.bytes, lexicon.bytes)
    ui = Limit(largest, f"{largest / 2**20:.1f} MB (the largest UI event: a full lexicon, a "
                        "dialogue script)")
    # Gradio's uploads: no slack, so that this limit, not Gradio's own file limit (the same
    # size, of the file alone), answers first, in the one error shape.
    ui_upload = Limit(int(mb * 2**20), upload.label)
    return routes, BodyRule(json=small), BodyRule(json=ui, form=ui_upload, other=ui)


def install_guards(app: FastAPI, settings) -> None:
    """Add the body guard and, outside it, the origin guard to ``app`` (call once, before
    the app serves; they wrap every route, mounted Gradio included)."""
    routes, api_rule, ui_rule = body_rules(settings)
    prefix = (settings.root_path or "").rstrip("/")

    def rule_for(method: str, path: str) -> BodyRule:
        if prefix and path.startswith(prefix + "/"):
            path = path[len(prefix):]
        rule = routes.get((method, path.rstrip("/") or "/"))
        if rule is not None:
            return rule
        return api_rule if path.startswith(API_PREFIXES) else ui_rule

    app.add_middleware(BodyGuard, rule_for=rule_for)
    allowed = [o for o in (settings.allowed_origins or "").split(",") if o.strip()]
    app.add_middleware(OriginGuard, allowed=allowed)
