"""``POST /api/v1/dialogue``: a dialogue script → one audio file (or JSON with the per-line
table, the audio and its subtitles). Every line is checked before any is synthesized; a bad
tag or an unknown voice is a 422 naming the line."""

from __future__ import annotations

import base64
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from cosyvoice.audio.encode import check_format, encode, media_type
from cosyvoice.engine.base import SEED_MAX
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.longform.dialogue import (
    DEFAULT_GAP_S,
    DEFAULT_SPEAKER_GAP_S,
    DialogueResult,
    parse_script,
    render_dialogue,
)
from cosyvoice.pipeline import Synthesizer
from cosyvoice.server.api import Api, notes_header
from cosyvoice.server.errors import error_responses, read_json, validate_body
from cosyvoice.subtitles import to_srt, to_vtt


class DialogueBody(BaseModel):
    """Fields of ``POST /api/v1/dialogue`` (JSON)."""

    script: str = Field(description="one line per dialogue line: '[voice] text' or "
                        "'[voice|instruction] text'; a line without a tag continues the "
                        "previous speaker (docs/creator.md)")
    engine: str | None = Field(None, max_length=40, description="the engine that speaks "
                               "every line; empty = the default engine")
    gap_s: float = Field(DEFAULT_GAP_S, ge=0.0, le=5.0, description="silence between two "
                         "lines of one speaker (s)")
    speaker_gap_s: float = Field(DEFAULT_SPEAKER_GAP_S, ge=0.0, le=5.0, description="silence "
                                 "where the speaker changes (s)")
    speed: float = Field(1.0, ge=0.5, le=2.0)
    seed: int | None = Field(None, ge=0, le=SEED_MAX)
    format: Literal["wav", "pcm16", "flac", "mp3", "opus"] = "wav"
    response: Literal["audio", "json"] = Field("audio", description="audio: the joined file "
                                               "(per-line seconds in X-Dialogue-Lines); json: "
                                               "the per-line table, SRT, WebVTT and the audio "
                                               "in base64")


def run_dialogue(synth: Synthesizer, gate: SynthesisGate, body: DialogueBody
                 ) -> DialogueResult:
    settings = synth.settings
    lines = parse_script(body.script, settings.dialogue_max_lines,
                         settings.dialogue_max_chars)
    # One slot for the whole script: its lines run one after another.
    with gate.slot(sum(len(line.text) for line in lines)):
        return render_dialogue(synth, lines, engine=body.engine or None, gap_s=body.gap_s,
                               speaker_gap_s=body.speaker_gap_s, speed=body.speed,
                               seed=body.seed)


def dialogue_response(result: DialogueResult, body: DialogueBody) -> Response:
    fmt = check_format(body.format)
    data = encode(result.wav, result.sample_rate, fmt)
    notes = [f"line {r['line']}: {r['notes']}" for r in result.rows if r["notes"]]
    if body.response == "json":
        return JSONResponse({
            "lines": result.rows, "duration_s": round(result.duration_s, 3),
            "sample_rate": result.sample_rate, "elapsed_s": round(result.elapsed_s, 3),
            "file": result.path.name, "srt": to_srt(result.cues), "vtt": to_vtt(result.cues),
            "format": fmt, "audio_base64": base64.b64encode(data).decode("ascii")})
    headers = {"X-Audio-Duration": f"{result.duration_s:.3f}",
               "X-Synthesis-Seconds": f"{result.elapsed_s:.3f}",
               "X-Output-File": result.path.name,
               "X-Dialogue-Lines": ",".join(f"{r['line']}:{r['seconds']:.3f}"
                                            for r in result.rows)}
    if notes:
        headers["X-CosyVoice-Notes"] = notes_header(notes)
    return Response(data, media_type=media_type(fmt, result.sample_rate), headers=headers)


def dialogue_router(synth: Synthesizer, gate: SynthesisGate) -> APIRouter:
    api = Api(synth, gate)
    router = APIRouter()

    @router.post("/api/v1/dialogue", tags=["creator"], response_class=Response,
                 responses=error_responses(422, 429, 503, 507),
                 openapi_extra={"requestBody": {"content": {"application/json": {
                     "schema": DialogueBody.model_json_schema()}}}})
    async def dialogue(request: Request) -> Response:
        """Render a dialogue script of several voices into one file."""
        body = validate_body(DialogueBody, read_json(await request.body()))

        def work() -> Response:
            return dialogue_response(run_dialogue(synth, gate, body), body)

        return await api.until_drain_deadline(work)

    return router
