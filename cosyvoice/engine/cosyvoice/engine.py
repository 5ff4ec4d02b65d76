"""The CosyVoice engine's model spec and its synthesis over :class:`CosyVoiceSynth`.

Each sentence (already cleaned, split and normalized by our frontend) becomes the runtime's
inputs through the synth's mode method — ``zero_shot`` (clone: prompt + transcript),
``cross_lingual`` (prompt), ``instruct2`` (prompt + instruction), ``sft`` (a spk2info speaker)
or ``with_voice`` (a saved voice) — and its chunks are yielded as :class:`EngineChunk`s as the
runtime makes them: the token hops of ``tts(stream=True)`` when the request streams, else the
whole sentence (one ``final`` chunk). A streamed sentence ends with an empty ``final`` chunk (the
runtime's last hop is known only once the LLM stops; holding a hop back to mark it would delay
the audio by a hop). The final chunk carries the LLM's token count and decode time.
The validated prompt (at the engine's 24 kHz) is resampled to 16 kHz for the speech tokenizer
and CAM++ with the project's resampler.

This module is imported when the engine is served (bootstrap builds it), and it imports the
runtime — transformers, tokenizers, onnxruntime and our modules — at once rather than at the
first load: those libraries stay in the process for good once imported, so they belong to the
app's baseline memory, not to what a load/unload cycle of the model takes and gives back.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cosyvoice.audio.io import resample
from cosyvoice.engine.base import EngineChunk, EngineRequest
from cosyvoice.engine.cosyvoice import capabilities, folder_speakers
from cosyvoice.errors import ModelError, PromptError, TextError
from cosyvoice.frontend.plan import Sentence
from cosyvoice.lifecycle.manager import ModelLocation, ModelManager, ModelSpec
from cosyvoice.runtime.folder import ModelFolderError
from cosyvoice.runtime.frontend import ModelInputError
from cosyvoice.runtime.synthesis import CosyVoiceSynth, Hold, ModelClosedError
from cosyvoice.speaker.validation import PromptAudio

logger = logging.getLogger(__name__)

TOKENIZER_RATE = 16000  # the speech tokenizer's and CAM++'s input rate
# our modes with a prompt → the runtime's (every other prompt mode speaks cross-lingually)
PROMPT_MODES = {"clone": "zero_shot", "instruct": "instruct2"}


def model_spec(version: int, model_dir: str, dtype: str = "auto") -> ModelSpec:
    """The engine's one managed model, ``cosyvoice<version>``, loaded from ``model_dir`` (or
    the folder an admin chooses later); not required for readiness. ``dtype``: the LLM's
    and flow's (:func:`torch_dtype`). Unloading or replacing it closes the synth
    (:meth:`CosyVoiceSynth.close`: requests holding it finish first)."""
    name = f"cosyvoice{version}"
    location = ModelLocation(str(model_dir or ""))

    def load(device: str):
        if not location.path:
            raise ModelFolderError(
                f"no model folder is set for {name}: start the app with --model-dir DIR, or "
                f"load one in the models panel (POST /api/v1/models/{name}/load with "
                f'{{"model_dir": "DIR"}}) / 未设置 {name} 模型目录：启动时加 --model-dir，'
                "或在模型面板中加载")
        return CosyVoiceSynth.load(Path(location.path).expanduser(), version, device,
                                   dtype=torch_dtype(dtype, device))

    return ModelSpec(name, load, f"CosyVoice{version} released folder (LLM · flow · HiFT)",
                     required=False, location=location, close=lambda synth: synth.close())


DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def torch_dtype(name: str, device: str) -> torch.dtype:
    """``--cosyvoice-dtype``: auto (float32 on CPU, float16 on CUDA) or a name of DTYPES
    (fp32/fp16/bf16 accepted). HiFT always runs float32."""
    aliases = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}
    key = aliases.get(name, name)
    if key == "auto":
        return torch.float16 if str(device).startswith("cuda") else torch.float32
    if key not in DTYPES:
        raise ValueError(f"unknown CosyVoice dtype {name!r}; use auto, float32, float16 or "
                         "bfloat16 / 未知精度，请用 auto、float32、float16 或 bfloat16")
    return DTYPES[key]


def spoken_text(sentence: Sentence, phone_tokens: Callable[[Any], str] | None = None) -> str:
    """The sentence as our frontend normalized it: its language runs joined (a space only
    between two Latin-script runs). ``phone_tokens(run)``: the run's text with its
    pronunciation overrides written as the model's phone tokens (CosyVoice3)."""
    out = ""
    for run in sentence.runs:
        text = (phone_tokens(run) if phone_tokens and run.readings else run.text).strip()
        if out and text and (out[-1].isascii() and text[0].isascii()):
            out += " "
        out += text
    return out or sentence.text


@contextmanager
def input_errors() -> Iterator[None]:
    """The runtime's input errors (a ValueError, English + Chinese) as the request's 422; a
    model closed under the request (unloaded or replaced) as a 503."""
    try:
        yield
    except ModelClosedError as e:
        raise ModelError(str(e)) from e
    except ModelInputError as e:
        raise TextError(str(e)) from e


def _numpy(chunks: Iterator[torch.Tensor]) -> Iterator[np.ndarray]:
    """The runtime's chunks as float32 ``(T,)`` arrays on the CPU, each as it comes."""
    try:
        for chunk in chunks:
            yield chunk.detach().to("cpu", torch.float32).numpy().reshape(-1)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _held(chunks: Iterator[EngineChunk], hold: Hold) -> Iterator[EngineChunk]:
    """``chunks`` with the request's hold on the synth released when they end (finished,
    failed, or closed early); a generator dropped before its first chunk releases it too."""
    try:
        yield from chunks
    finally:
        hold.release()


class CosyVoiceEngine:
    """Synthesis with the ``cosyvoice<version>`` model of the one ModelManager."""

    def __init__(self, manager: ModelManager, version: int) -> None:
        self.manager = manager
        self.version = version
        self.model = f"cosyvoice{version}"
        self._caps_key: tuple | None = None
        self._caps = capabilities(version)

    @property
    def capabilities(self):
        """Capabilities with the current folder's spk2info speakers (re-read when the
        folder or its spk2info.pt changes)."""
        path = self.manager.location(self.model) or ""
        spk2info = Path(path).expanduser() / "spk2info.pt" if path else None
        try:
            stamp = os.stat(spk2info).st_mtime_ns if spk2info else None
        except OSError:
            stamp = None
        if (path, stamp) != self._caps_key:
            self._caps = capabilities(self.version, folder_speakers(path))
            self._caps_key = (path, stamp)
        return self._caps

    # ---- synthesis --------------------------------------------------------------------
    def synthesize(self, request: EngineRequest) -> Iterator[EngineChunk]:
        """A sentence's chunks: the runtime's token hops when the request streams (each as it
        is vocoded), else the whole sentence. A speed other than 1 is rendered whole (the
        runtime streams at speed 1 only), streamed request or not. The request holds the
        synth until its chunks end (see :meth:`_hold`)."""
        synth, hold = self._hold()
        try:
            inputs = self._inputs(synth, request)  # checks the request before any chunk
            phones = self._phone_tokens(request)
        except BaseException:
            hold.release()
            raise
        stream = request.stream and request.speed == 1.0

        def chunks() -> Iterator[EngineChunk]:
            from cosyvoice.runtime.synthesis import DecodeStats

            for i, sentence in enumerate(request.sentences):
                stats = DecodeStats()
                with torch.inference_mode(), input_errors():
                    hops = synth.tts(inputs(spoken_text(sentence, phones)), stream=stream,
                                     speed=request.speed, seed=request.seed, stats=stats)
                last = np.zeros(0, np.float32)  # streamed: an empty end marker
                with input_errors():  # the runtime's own generator runs in inference mode
                    for wav in _numpy(hops):
                        if not stream:
                            last = wav  # whole: the one chunk, final
                            continue
                        yield EngineChunk(i, wav, final=False)
                yield EngineChunk(i, last, final=True, llm_tokens=stats.tokens,
                                  llm_s=stats.llm_s)

        held = _held(chunks(), hold)
        weakref.finalize(held, hold.release)  # dropped unstarted: its finally never runs
        return held

    def _hold(self) -> tuple[CosyVoiceSynth, Hold]:
        """``(synth, hold)``: the READY model held for one request, so that an unload or a
        reload meanwhile lets the request finish on it (the old model is freed when the last
        hold ends). A folder that fails to load, or a model unloaded between the lookup and
        the hold: ModelError (503)."""
        synth = self.manager.get(self.model)
        with input_errors():
            return synth, synth.hold()

    def _phone_tokens(self, req: EngineRequest) -> Callable[[Any], str] | None:
        """How pronunciation overrides reach the model: CosyVoice3 reads ARPAbet and pinyin
        phone tokens inline (``[T][AH0]``, ``[zh][òng]``); CosyVoice2 has none, so its
        overrides are noted as not applied (never dropped silently)."""
        readings = {r.written(): r for s in req.sentences for run in s.runs
                    for r in run.readings.values()}
        if not readings:
            return None
        words = ", ".join(readings)
        if self.version != 3:
            req.notes.append(f"pronunciation overrides are not supported by CosyVoice2 and "
                             f"were not applied: {words} / CosyVoice2 不支持读音标注，未应用")
            return None
        from cosyvoice.frontend.pronunciation import with_phone_tokens
        from cosyvoice.runtime.text_tokens import COSYVOICE3_SPECIALS

        def tokens(run) -> str:
            text, skipped = with_phone_tokens(run.text, run.readings, COSYVOICE3_SPECIALS)
            for r in skipped:
                note = (f"CosyVoice3 has no phone tokens for {r.written()}; the word is read "
                        f"as written / CosyVoice3 无法表示该读音，按原文朗读")
                if note not in req.notes:
                    req.notes.append(note)
            return text

        return tokens

    def _inputs(self, synth: Any, req: EngineRequest) -> Callable[[str], dict]:
        """text → the runtime's inputs for the request's mode. A prompt's speech tokens, mel
        and embedding are computed once per request (as a voice), not once per sentence."""
        if req.prompt is not None:
            p16, p24 = self.prompt_tensors(req.prompt)
            with torch.inference_mode(), input_errors():
                voice = synth.voice(p16, p24, req.prompt_text if req.mode == "clone" else "")
            mode = PROMPT_MODES.get(req.mode, "cross_lingual")
            return lambda text: synth.with_voice(text, voice, mode, req.instruction)
        saved = req.saved_voice
        if saved is None and req.voice not in synth.speakers:
            raise PromptError(
                f"the {self.model} engine needs a prompt recording, a saved voice of this "
                f"engine or one of the folder's preset voices "
                f"({', '.join(synth.speakers) or 'this folder has none'}) / 需要参考音频、"
                "本引擎保存的音色或模型目录中的预置音色")
        if req.mode == "instruct":  # a saved or preset voice, told how to speak
            voice = saved.engine_voice() if saved is not None else synth.spk2info[req.voice]
            return lambda text: synth.with_voice(text, voice, "instruct2", req.instruction)
        if saved is not None:
            voice = saved.engine_voice()
            return lambda text: synth.with_voice(text, voice, "zero_shot")
        return lambda text: synth.sft(text, req.voice)

    @staticmethod
    def prompt_tensors(prompt: PromptAudio) -> tuple[torch.Tensor, torch.Tensor]:
        """The validated prompt as float32 ``(1, T)`` tensors at 16 kHz and 24 kHz."""
        wav = np.asarray(prompt.wav, np.float32)
        p24 = wav if prompt.sr == 24000 else resample(wav, prompt.sr, 24000)
        p16 = resample(wav, prompt.sr, TOKENIZER_RATE)
        return (torch.from_numpy(np.ascontiguousarray(p16, np.float32))[None],
                torch.from_numpy(np.ascontiguousarray(p24, np.float32))[None])

    # ---- voices -----------------------------------------------------------------------
    def voice_from_prompt(self, prompt: PromptAudio, prompt_text: str = "") -> dict:
        """The voice in spk2info form (speech tokens, prompt mel, speaker embedding and the
        transcript's ids), saved as voice.pt and offered by this engine only."""
        synth, hold = self._hold()
        p16, p24 = self.prompt_tensors(prompt)
        with hold, torch.inference_mode(), input_errors():
            return synth.voice(p16, p24, prompt_text)

    def warm(self) -> None:
        """Nothing to measure: the folder's load is the whole start-up cost."""
