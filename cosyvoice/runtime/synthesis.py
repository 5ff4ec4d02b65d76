"""CosyVoice2 / Fun-CosyVoice3 synthesis from a released model folder: every mode's inputs, and
``tts`` — speech tokens from the LLM (or a source recording), then the flow and HiFT — whole or
streamed, as the reference's ``CosyVoice2Model.tts`` / ``CosyVoice3Model.tts`` do, in one thread.

Streaming: the flow gets token hops of ``chunk_size`` (25) tokens — the first one padded so that
prompt + hop is a multiple of 25 — doubling per chunk up to 4 × 25, each with the flow's
``pre_lookahead_len`` (3) tokens of look-ahead; the rest goes in a last call with
``finalize=True`` (and, as in the reference, full rather than chunk-causal attention). The hop
state is the request's own: the reference keeps it on the shared model, so its second streamed
request starts at 100-token hops; ours do not.

Determinism: ``seed`` seeds two private generators, one for the LLM's sampling and one for
HiFT's noise (CosyVoice2's sine source draws per call), so a seeded request gives the same samples
streamed or not and run after run, and no global random state is read or changed. They equal
the reference's samples when its global generator is seeded with the same seed before its LLM
runs and again before its first ``token2wav`` (tests/runtime/test_synthesis_parity.py).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from cosyvoice.runtime.folder import (
    ModelFolder,
    ModelFolderError,
    check_folder,
    load_part,
    load_tensors,
)
from cosyvoice.runtime.frontend import CosyVoiceFrontend, ModelInputError, without_lengths
from cosyvoice.runtime.llm import END_OF_PROMPT_ID
from cosyvoice.runtime.sampling import RasSampler
from cosyvoice.runtime.token2wav import token2wav

logger = logging.getLogger(__name__)

# CosyVoice3's FSQ silence and breath tokens: after 5 in a row, more are dropped (not vocoded).
V3_SILENT_TOKENS = frozenset({1, 2, 28, 29, 55, 248, 494, 2241, 2242, 2322, 2323})
MAX_SILENT_RUN = 5
MAX_HOP_FACTOR = 4  # hops grow ×2 per chunk up to 4 × chunk_size


class SynthesisError(ModelInputError):
    """A request the model cannot synthesize; the message says what to change."""


class ModelClosedError(SynthesisError):
    """The model was closed (unloaded or replaced) before this request took hold of it."""


def _error(en: str, zh: str) -> SynthesisError:
    return SynthesisError(f"{en} / {zh}")


@dataclass
class HopSchedule:
    """Which tokens the next streamed chunk covers: ``ready(n)`` once n tokens are decoded."""

    hop: int
    pad: int
    lookahead: int
    max_hop: int
    offset: int = 0

    @classmethod
    def for_prompt(cls, prompt_tokens: int, chunk: int, lookahead: int) -> HopSchedule:
        pad = -prompt_tokens % chunk
        return cls(hop=chunk, pad=pad, lookahead=lookahead, max_hop=MAX_HOP_FACTOR * chunk)

    @property
    def current(self) -> int:
        return self.hop + self.pad if self.offset == 0 else self.hop

    def ready(self, decoded: int) -> bool:
        return decoded - self.offset >= self.current + self.lookahead

    def end(self) -> int:
        """Tokens the ready chunk passes to the flow (its look-ahead included)."""
        return self.offset + self.current + self.lookahead

    def advance(self) -> None:
        self.offset += self.current
        self.hop = min(self.max_hop, self.hop * 2)


@dataclass
class DecodeStats:
    """What one ``tts`` call's LLM did: speech tokens decoded and the seconds spent decoding
    them (the flow and HiFT excluded); filled while its chunks are read."""

    tokens: int = 0
    llm_s: float = 0.0


def _timed(tokens: Iterator[int], stats: DecodeStats) -> Iterator[int]:
    """``tokens``, counting each one and the time its decode took into ``stats``."""
    while True:
        t0 = time.perf_counter()
        try:
            token = next(tokens)
        except StopIteration:
            return
        stats.tokens += 1
        stats.llm_s += time.perf_counter() - t0
        yield token


def drop_long_silences(tokens: Iterator[int], silent: frozenset[int]) -> Iterator[int]:
    """Tokens with every run of silent ones cut to ``MAX_SILENT_RUN``."""
    run = 0
    for token in tokens:
        if token in silent:
            run += 1
            if run > MAX_SILENT_RUN:
                continue
        else:
            run = 0
        yield token


def _closed() -> ModelClosedError:
    return ModelClosedError("this CosyVoice model was closed (unloaded or replaced); load it "
                            "again / 该 CosyVoice 模型已卸载或已替换，请重新加载")


class Hold:
    """A request's hold on a :class:`CosyVoiceSynth` (:meth:`CosyVoiceSynth.hold`); released
    once, by :meth:`release` or at the end of a ``with`` block."""

    def __init__(self, synth: CosyVoiceSynth) -> None:
        self._synth: CosyVoiceSynth | None = synth

    def release(self) -> None:
        synth, self._synth = self._synth, None
        if synth is not None:
            synth._let_go()

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _fresh_seed() -> int:
    return int(torch.Generator().seed() % (2 ** 63))


class CosyVoiceSynth:
    """A loaded CosyVoice2/3 folder: ``load``, build a mode's inputs, ``tts`` them, ``close``."""

    def __init__(self, folder: ModelFolder, llm, flow, hift, frontend: CosyVoiceFrontend,
                 spk2info: dict[str, dict], device: torch.device) -> None:
        self.folder = folder
        self.version = folder.version
        self.sample_rate = folder.hparams.sample_rate
        self.device = device
        self.llm, self.flow, self.hift, self.frontend = llm, flow, hift, frontend
        self.spk2info = spk2info
        self.speakers = list(spk2info)
        self._users = 0  # requests holding the model (hold); close waits for the last one
        self._closing = False
        self._users_lock = threading.Lock()

    # --- loading -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, version: int, device: str = "cpu",
             dtype: torch.dtype = torch.float32) -> CosyVoiceSynth:
        """Check the folder, build and strictly load its parts; ``dtype`` for the LLM and flow
        (HiFT stays float32). Raises :class:`ModelFolderError` for any bad folder."""
        folder = check_folder(path, version)
        dev = torch.device(device)
        llm = load_part(folder, "llm").to(dev, dtype)
        flow = load_part(folder, "flow").to(dev, dtype)
        hift = load_part(folder, "hift").to(dev)
        frontend = CosyVoiceFrontend(folder)
        spk2info = load_spk2info(folder.spk2info) if folder.spk2info else {}
        logger.info("CosyVoice%d loaded from %s on %s (%d preset voices)", version, folder.path,
                    dev, len(spk2info))
        return cls(folder, llm, flow, hift, frontend, spk2info, dev)

    def hold(self) -> Hold:
        """One request's hold on the model: :meth:`close` keeps the modules until every hold
        is released (``with synth.hold(): ...`` or ``Hold.release``). ModelClosedError when
        the model is already closing."""
        with self._users_lock:
            if self._closing:
                raise _closed()
            self._users += 1
        return Hold(self)

    def _let_go(self) -> None:
        with self._users_lock:
            self._users -= 1
            last = self._closing and self._users == 0
        if last:
            self._release()

    @property
    def closed(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Drop the modules and free their memory; the object cannot synthesize afterwards.
        New holds are refused at once; requests holding the model finish first (the last
        one's release frees it), so an unload never breaks a request in flight."""
        with self._users_lock:
            self._closing = True
            idle = self._users == 0
        if idle:
            self._release()

    def _release(self) -> None:
        """Every module, the frontend's ONNX sessions and the preset voices dropped; on
        CUDA the allocator's cached blocks go back to the driver."""
        self.llm = self.flow = self.hift = self.frontend = None
        self.spk2info = {}
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        logger.info("CosyVoice%d model closed (%s)", self.version, self.folder.path)

    def _front(self) -> CosyVoiceFrontend:
        if self.frontend is None:
            raise _closed()
        return self.frontend

    # --- inputs of each mode -------------------------------------------------------------
    def zero_shot(self, text: str, prompt_text: str, prompt_16k: torch.Tensor,
                  prompt_24k: torch.Tensor) -> dict:
        return self._front().zero_shot(text, prompt_text, prompt_16k, prompt_24k)

    def cross_lingual(self, text: str, prompt_16k: torch.Tensor, prompt_24k: torch.Tensor) -> dict:
        return self._front().cross_lingual(text, prompt_16k, prompt_24k)

    def instruct2(self, text: str, instruction: str, prompt_16k: torch.Tensor,
                  prompt_24k: torch.Tensor) -> dict:
        if not instruction.strip():
            raise _error("instruct2 needs an instruction", "instruct2 模式需要指令文本")
        return self._front().instruct2(text, instruction, prompt_16k, prompt_24k)

    def sft(self, text: str, speaker: str) -> dict:
        """A preset voice of ``spk2info.pt`` (an entry saved in zero-shot form speaks
        zero-shot, as the reference's ``zero_shot_spk_id`` does)."""
        if speaker not in self.spk2info:
            known = ", ".join(self.speakers) or "none"
            raise _error(f"unknown voice {speaker!r}; this folder's preset voices: {known}",
                         f"未知音色 {speaker!r}；该模型目录的预置音色：{known}")
        voice = self.spk2info[speaker]
        if "embedding" in voice:
            return self._front().sft(text, voice)
        return self._front().with_voice(text, voice, "zero_shot")

    def vc(self, source_16k: torch.Tensor, prompt_16k: torch.Tensor,
           prompt_24k: torch.Tensor) -> dict:
        return self._front().vc(source_16k, prompt_16k, prompt_24k)

    def voice(self, prompt_16k: torch.Tensor, prompt_24k: torch.Tensor,
              prompt_text: str = "") -> dict:
        return self._front().voice(prompt_16k, prompt_24k, prompt_text)

    def with_voice(self, text: str, voice: dict, mode: str = "zero_shot",
                   instruction: str = "") -> dict:
        return self._front().with_voice(text, voice, mode, instruction)

    # --- synthesis -----------------------------------------------------------------------
    def tts(self, inputs: dict, *, stream: bool = False, speed: float = 1.0,
            seed: int | None = None, stats: DecodeStats | None = None
            ) -> Iterator[torch.Tensor]:
        """Float32 (T,) chunks at ``sample_rate``: one when ``stream`` is False, else one per
        token hop. Inputs are checked here, before the first chunk is asked for."""
        self._front()
        inputs = without_lengths(inputs)
        self._check(inputs, stream, speed)
        return self._chunks(inputs, stream, speed, _fresh_seed() if seed is None else int(seed),
                            stats)

    def _check(self, inputs: dict, stream: bool, speed: float) -> None:
        if not speed > 0:
            raise _error(f"speed must be above 0, got {speed}", f"语速须大于 0，当前为 {speed}")
        if stream and speed != 1.0:
            raise _error("a speed other than 1.0 needs non-streamed synthesis",
                         "调整语速仅支持非流式合成")
        emb = inputs.get("flow_embedding")
        if emb is None or emb.numel() == 0:
            raise _error("the inputs have no speaker embedding (flow_embedding); build them with "
                         "zero_shot, cross_lingual, instruct2, sft, vc or with_voice",
                         "输入缺少说话人向量（flow_embedding），请用对应模式的方法生成输入")
        source = inputs.get("source_speech_token")
        if source is not None and source.numel() > 0:
            return
        text = inputs.get("text")
        if text is None or text.numel() == 0:
            raise _error("nothing to say: the text is empty", "文本为空，无可合成内容")
        if self.version == 3:
            ids = torch.cat([inputs.get("prompt_text", text[:, :0]).reshape(1, -1),
                             text.reshape(1, -1)], dim=1)
            if not bool((ids == END_OF_PROMPT_ID).any()):
                raise _error("CosyVoice3 needs <|endofprompt|> in the text or prompt text; "
                             "build the inputs with this model's methods",
                             "CosyVoice3 的文本或提示文本中必须包含 <|endofprompt|>，"
                             "请用本模型的方法生成输入")

    def speech_tokens(self, inputs: dict, seed: int) -> list[int]:
        """The speech tokens ``tts(inputs, seed=seed)`` vocodes (tests, benchmarks)."""
        self._front()
        inputs = without_lengths(inputs)
        self._check(inputs, False, 1.0)
        with torch.inference_mode():
            return list(self._tokens(inputs, torch.Generator().manual_seed(seed)))

    def _tokens(self, inputs: dict, generator: torch.Generator) -> Iterator[int]:
        """Speech tokens: a source recording's (voice conversion) or the LLM's, one by one."""
        source = inputs.get("source_speech_token")
        if source is not None and source.numel() > 0:
            yield from (int(t) for t in source.flatten().tolist())
            return
        ras = RasSampler(self.folder.hparams.llm.sampling, generator)

        def sampler(logp: torch.Tensor, decoded: list[int]) -> int:
            return ras(logp.float().cpu(), decoded)

        empty = torch.zeros(1, 0, dtype=torch.int32)
        tokens = self.llm.inference(
            inputs["text"].to(self.device, torch.int32),
            inputs.get("prompt_text", empty).to(self.device, torch.int32),
            inputs.get("llm_prompt_speech_token", empty).to(self.device, torch.int32), sampler)
        try:
            if self.version == 3:
                tokens = drop_long_silences(tokens, V3_SILENT_TOKENS)
            yield from tokens
        finally:
            tokens.close()

    @torch.inference_mode()
    def _chunks(self, inputs: dict, stream: bool, speed: float, seed: int,
                stats: DecodeStats | None = None) -> Iterator[torch.Tensor]:
        prompt_token = inputs.get("flow_prompt_speech_token",
                                  torch.zeros(1, 0, dtype=torch.int32))
        prompt_feat = inputs.get("prompt_speech_feat", torch.zeros(1, 0, 80))
        vocoder = token2wav(self.version, self.flow, self.hift, prompt_token, prompt_feat,
                            inputs["flow_embedding"].reshape(1, -1),
                            generator=torch.Generator(self.device).manual_seed(seed))
        config = self.flow.config
        schedule = HopSchedule.for_prompt(prompt_token.shape[1], config.chunk_size,
                                          config.pre_lookahead_len)
        decoded: list[int] = []
        tokens = self._tokens(inputs, torch.Generator().manual_seed(seed))
        timed = _timed(tokens, stats) if stats is not None else tokens
        try:
            for token in timed:
                decoded.append(token)
                while stream and schedule.ready(len(decoded)):
                    chunk = torch.tensor([decoded[:schedule.end()]], dtype=torch.int32)
                    wave = vocoder(chunk, schedule.offset, finalize=False, streaming=True)
                    schedule.advance()
                    yield wave[0].float().cpu()
            if not decoded:
                raise _error("the model produced no speech tokens for this text",
                             "模型未为该文本生成语音单元")
            wave = vocoder(torch.tensor([decoded], dtype=torch.int32), schedule.offset,
                           finalize=True, streaming=False, speed=speed)
            yield wave[0].float().cpu()
        finally:
            tokens.close()
            del vocoder, decoded, tokens


def load_spk2info(path: Path) -> dict[str, dict]:
    """``spk2info.pt``: voice id -> dict of tensors (:func:`load_tensors`: weights only)."""
    info = load_tensors(path, "remove it or download it again", "请删除或重新下载")
    if not isinstance(info, dict) or not all(
            isinstance(v, dict) and all(isinstance(t, torch.Tensor) for t in v.values())
            for v in info.values()):
        raise ModelFolderError(f"{path.name} is not a dict of voices (id -> tensors) / "
                               f"{path.name} 不是音色字典（名称 -> 张量）")
    return {str(k): v for k, v in info.items()}
