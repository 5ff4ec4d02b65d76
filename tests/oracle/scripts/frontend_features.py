"""The reference frontend's speech tokens and speaker embedding for given 16 kHz audio.

Runs ``CosyVoiceFrontEnd._extract_speech_token`` and ``_extract_spk_embedding`` themselves, on the
folder's ONNX files, with sessions opened as the frontend's ``__init__`` opens them. Its
``load_wav`` (torchaudio I/O, absent here) is replaced by a lookup of the given waveforms, so the
comparison starts from the same 16 kHz samples. Also returns the raw features, computed as those
methods compute them: ``whisper.log_mel_spectrogram(speech, n_mels=128)`` and mean-normalised
``kaldi.fbank(speech, num_mel_bins=80, dither=0, sample_frequency=16000)``.
"""

import os

import cosyvoice.cli.frontend as ref_frontend
import onnxruntime
import torch
import torchaudio.compliance.kaldi as kaldi
import whisper


def _session(path):
    option = onnxruntime.SessionOptions()
    option.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    option.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(path, sess_options=option,
                                        providers=["CPUExecutionProvider"])


def main(folder, audios, version=2):
    frontend = ref_frontend.CosyVoiceFrontEnd.__new__(ref_frontend.CosyVoiceFrontEnd)
    frontend.device = torch.device("cpu")
    frontend.campplus_session = _session(os.path.join(folder, "campplus.onnx"))
    frontend.speech_tokenizer_session = _session(
        os.path.join(folder, f"speech_tokenizer_v{version}.onnx"))
    ref_frontend.load_wav = lambda key, sr: audios[int(key)]
    out = []
    for i, speech in enumerate(audios):
        fbank = kaldi.fbank(speech, num_mel_bins=80, dither=0, sample_frequency=16000)
        tokens, _ = frontend._extract_speech_token(str(i))
        out.append({"log_mel": whisper.log_mel_spectrogram(speech, n_mels=128),
                    "campplus_input": (fbank - fbank.mean(dim=0, keepdim=True)).unsqueeze(0),
                    "speech_token": tokens,
                    "embedding": frontend._extract_spk_embedding(str(i))})
    return {"results": out}
