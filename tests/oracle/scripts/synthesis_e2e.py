"""The reference's end-to-end synthesis (``CosyVoice2Model.tts`` / ``CosyVoice3Model.tts``), made
reproducible, and its frontend's model inputs for instruct2, sft, vc and saved voices.

The reference runs its LLM in a thread and draws from the global generator in both threads, so
its streamed output depends on timing. Here ``threading.Thread`` (as ``cli/model.py`` sees it) runs
its target when started: the global generator is seeded with the case's seed, the LLM decodes
every token, and the generator is seeded again with the same seed before the first
``token2wav`` — what our runtime's two private generators do. ``time.sleep`` (its polling) is
skipped. ``token_hop_len`` is reset to 25 before each request: the reference keeps the hop on the
model and doubles it per chunk, so its next streamed request would start at 100.

``cases``: dicts with ``inputs`` (model-input dict), ``stream``, ``speed``, ``seed``. Returns per
case the chunks and the tokens passed to the last ``token2wav`` (all of them).
``frontend``: texts and audio for the reference frontend's ``frontend_instruct2``,
``frontend_sft``, ``frontend_vc`` and a saved voice (``add_zero_shot_spk``'s dict, then
``frontend_zero_shot`` / ``frontend_cross_lingual`` with its id).
"""

import threading
import types

import cosyvoice.cli.frontend as ref_frontend
import cosyvoice.cli.model as ref_model
import torch
from oracle_model import load_frontend, load_parts, yaml_name


class _InlineThread:
    """Runs ``target`` at ``start()`` between two reseeds of the global generator."""

    seed = 0

    def __init__(self, target, args=(), kwargs=None):
        self.target, self.args, self.kwargs = target, args, kwargs or {}

    def start(self):
        torch.manual_seed(self.seed)
        self.target(*self.args, **self.kwargs)
        torch.manual_seed(self.seed)

    def join(self):
        pass


def _model(folder):
    parts = load_parts(folder)
    cls = ref_model.CosyVoice3Model if yaml_name(folder) == "cosyvoice3.yaml" else \
        ref_model.CosyVoice2Model
    model = cls(parts["llm"], parts["flow"], parts["hift"], fp16=False)
    ref_model.threading = types.SimpleNamespace(Thread=_InlineThread, Lock=threading.Lock)
    ref_model.time = types.SimpleNamespace(sleep=lambda seconds: None)
    return model


def _run(model, inputs, stream, speed, seed):
    last = {}
    token2wav = model.token2wav

    def recording(**kwargs):
        last["tokens"] = kwargs["token"].flatten().clone()
        return token2wav(**kwargs)

    model.token2wav = recording
    model.token_hop_len = 25
    _InlineThread.seed = seed
    chunks = [out["tts_speech"].flatten().clone()
              for out in model.tts(**inputs, stream=stream, speed=speed)]
    del model.token2wav
    return {"chunks": chunks, "tokens": last["tokens"]}


def _frontend(folder, f):
    frontend = load_frontend(folder)
    audio = {("prompt", 16000): f["prompt_16k"], ("prompt", 24000): f["prompt_24k"],
             ("source", 16000): f["source_16k"]}
    ref_frontend.load_wav = lambda key, sr: audio[(key, sr)]
    out = {"instruct2": frontend.frontend_instruct2(f["text"], f["instruction"], "prompt",
                                                    24000, ""),
           "sft": frontend.frontend_sft(f["sft_text"], f["speaker"]),
           "vc": frontend.frontend_vc("source", "prompt", 24000)}
    voice = frontend.frontend_zero_shot("", f["prompt_text"], "prompt", 24000, "")
    del voice["text"], voice["text_len"]
    frontend.spk2info["saved"] = voice
    out["voice"] = dict(voice)
    out["voice_zero_shot"] = frontend.frontend_zero_shot(f["text"], "", "", 24000, "saved")
    out["voice_cross_lingual"] = frontend.frontend_cross_lingual(f["cross_text"], "", 24000,
                                                                 "saved")
    return {k: dict(v) for k, v in out.items()}


def main(folder, cases=(), frontend=None):
    out = {}
    if frontend is not None:
        out["frontend"] = _frontend(folder, frontend)
    if cases:
        model = _model(folder)
        out["cases"] = [_run(model, c["inputs"], c["stream"], c["speed"], c["seed"])
                        for c in cases]
    return out
