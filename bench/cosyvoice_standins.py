"""Stand-ins for the parts of a released CosyVoice folder that are not state dicts.

- ``campplus.onnx``: the CAM++ speaker encoder. Input ``input`` (B, T, 80) mean-normalised Kaldi
  fbank, output ``output`` (B, 192). Stand-in: time average → seeded 80×192 projection → tanh.
- ``speech_tokenizer_v{2,3}.onnx``: input ``feats`` (1, 128, T) Whisper log-mel and
  ``feats_length`` (1,) int32; output ``indices`` (1, T // 4) int64 speech tokens in [0, 6561)
  (25 tokens a second from 100 mel frames a second). Stand-in: 4-frame average pool → seeded
  128×6561 projection → argmax.
- ``CosyVoice-BlankEN/``: the Qwen2 tokenizer. Stand-in: a byte-level BPE trained on a few
  sentences, padded with unreachable entries to Qwen2's 151,643 ordinary tokens, then the three
  special tokens Qwen2 defines (``<|endoftext|>`` 151643, ``<|im_start|>``, ``<|im_end|>``), so the
  tokens CosyVoice adds land on the released ids (``<|endofprompt|>`` = 151646).

The reference addresses both ONNX inputs by position; the names above are the released files'.
Real folders carry the real models and the real tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SPEECH_TOKENS = 6561
QWEN_ORDINARY = 151643
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen2's pre-tokenizer split (public tokenizer.json of the Qwen2 family).
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
              r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen2.5-0.5B's published config (CosyVoice-BlankEN/config.json in the released folders).
QWEN_REAL = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
    "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
    "num_attention_heads": 14, "num_key_value_heads": 2, "max_position_embeddings": 32768,
    "max_window_layers": 24, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "use_sliding_window": False, "tie_word_embeddings": True,
    "vocab_size": 151936, "bos_token_id": 151643, "eos_token_id": 151643,
    "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
    "torch_dtype": "float32",
}
# Same vocabulary (the special token ids are fixed by the tokenizer), everything else small.
QWEN_TINY = {**QWEN_REAL, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "max_window_layers": 2}

CORPUS = [
    "Hello, this is a voice cloning test. The quick brown fox jumps over the lazy dog.",
    "We read numbers like 2025 and 3.14, and questions: how are you today?",
    "希望你以后能够做的比我还好呦。收到好友从远方寄来的生日礼物，那份意外的惊喜让我心中充满了甜蜜。",
    "今天天气很好，我们一起去公园散步吧。这是一个语音合成的测试。",
]


def _save(graph: onnx.GraphProto, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="cosyvoice-webui stand-in")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def write_campplus_onnx(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed + 11)
    weight = (rng.standard_normal((80, 192)) / np.sqrt(80)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["input", "axis1"], ["pooled"], keepdims=0),
        helper.make_node("MatMul", ["pooled", "proj"], ["projected"]),
        helper.make_node("Tanh", ["projected"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, "campplus_standin",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["B", "T", 80])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["B", 192])],
        initializer=[numpy_helper.from_array(weight, "proj"),
                     numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1")])
    _save(graph, path)


def write_speech_tokenizer_onnx(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed + 13)
    weight = rng.standard_normal((128, SPEECH_TOKENS)).astype(np.float32)
    nodes = [
        helper.make_node("AveragePool", ["feats"], ["pooled"], kernel_shape=[4], strides=[4]),
        helper.make_node("Transpose", ["pooled"], ["frames"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["frames", "proj"], ["scores"]),
        helper.make_node("ArgMax", ["scores"], ["indices"], axis=2, keepdims=0),
        # feats_length is an input of the released model; the stand-in reads all frames.
        helper.make_node("Identity", ["feats_length"], ["unused_length"]),
    ]
    graph = helper.make_graph(
        nodes, "speech_tokenizer_standin",
        [helper.make_tensor_value_info("feats", TensorProto.FLOAT, [1, 128, "T"]),
         helper.make_tensor_value_info("feats_length", TensorProto.INT32, [1])],
        [helper.make_tensor_value_info("indices", TensorProto.INT64, [1, "T4"])],
        initializer=[numpy_helper.from_array(weight, "proj")])
    _save(graph, path)


def write_qwen_tokenizer(folder: Path) -> None:
    """tokenizer.json, vocab.json, merges.txt and tokenizer_config.json of a Qwen2-shaped BPE."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.trainers import BpeTrainer

    def pre_tokenizer():
        return pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])

    trained = Tokenizer(models.BPE())
    trained.normalizer = normalizers.NFC()
    trained.pre_tokenizer = pre_tokenizer()
    trained.train_from_iterator(CORPUS, BpeTrainer(
        vocab_size=1000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    state = json.loads(trained.to_str())["model"]
    vocab = dict(state["vocab"])
    merges = [m if isinstance(m, str) else " ".join(m) for m in state["merges"]]
    for i in range(QWEN_ORDINARY - len(vocab)):
        vocab[f"<unused_{i}>"] = len(vocab)  # never produced: no merge leads to it
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges],
                               byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizer()
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(QWEN_SPECIALS)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n",
                                       encoding="utf-8")
    added = {str(QWEN_ORDINARY + i): {"content": t, "lstrip": False, "rstrip": False,
                                       "normalized": False, "single_word": False,
                                       "special": True} for i, t in enumerate(QWEN_SPECIALS)}
    config = {"tokenizer_class": "Qwen2Tokenizer", "added_tokens_decoder": added,
              "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
              "bos_token": None, "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
              "unk_token": None, "errors": "replace", "model_max_length": 32768,
              "clean_up_tokenization_spaces": False, "split_special_tokens": False}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def write_standins(out: Path, version: int, qwen_config: dict, seed: int = 0) -> None:
    """A folder's parts that are not state dicts: ``CosyVoice-BlankEN/`` (``qwen_config`` as
    its config.json, and the tokenizer), ``campplus.onnx``, ``speech_tokenizer_v{version}.onnx``."""
    qwen = out / "CosyVoice-BlankEN"
    qwen.mkdir(exist_ok=True)
    (qwen / "config.json").write_text(json.dumps(qwen_config, indent=2), encoding="utf-8")
    write_qwen_tokenizer(qwen)
    write_campplus_onnx(out / "campplus.onnx", seed=seed)
    write_speech_tokenizer_onnx(out / f"speech_tokenizer_v{version}.onnx", seed=seed)
