"""GE2E speaker encoder on real recordings, and the embedding cache."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from cosyvoice.errors import PromptError
from cosyvoice.speaker.cache import EmbeddingCache, LruCache, audio_key, embed_cached
from cosyvoice.speaker.encoder import EncoderConfig, SpeakerEncoder, cosine, partial_starts

SR = 16000


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    return SpeakerEncoder.load(device="cpu")


@pytest.fixture(scope="module")
def embeddings(encoder, recordings) -> dict[str, np.ndarray]:
    return {name: encoder.embed(wav, SR) for name, wav in recordings.items()}


def test_loaded_in_eval_mode_with_all_weights(encoder):
    assert not encoder.training
    assert set(encoder.state_dict()) == {f"lstm.{kind}_l{i}" for i in range(3) for kind in
                                         ("weight_ih", "weight_hh", "bias_ih", "bias_hh")} | {
        "linear.weight", "linear.bias"}


def test_embedding_shape_and_norm(embeddings):
    for emb in embeddings.values():
        assert emb.shape == (256,) and emb.dtype == np.float32
        assert float(np.linalg.norm(emb)) == pytest.approx(1.0, abs=1e-5)
        assert float(emb.min()) >= 0.0            # ReLU before the norm


def test_same_speaker_closer_than_different_speaker(embeddings):
    same = cosine(embeddings["cate"], embeddings["cate2"])
    cross = max(cosine(embeddings["cate"], embeddings["heath"]),
                cosine(embeddings["cate2"], embeddings["heath"]))
    # measured: same 0.75, cross 0.47 / 0.54
    assert same > cross + 0.1, (same, cross)
    assert SpeakerEncoder.similarity(embeddings["cate"], embeddings["cate"]) == pytest.approx(1.0)


def test_input_rate_does_not_matter(encoder, make_prompts, embeddings):
    at_32k = encoder.embed(make_prompts.load_real("cate_blanch.mp3", 32000), 32000)
    assert cosine(at_32k, embeddings["cate"]) > 0.995


def test_quiet_input_is_raised_to_training_level(encoder, recordings):
    wav = recordings["cate"]
    quiet, quieter = encoder.embed(0.01 * wav, SR), encoder.embed(0.001 * wav, SR)
    assert cosine(quiet, quieter) > 0.9999


def test_empty_input_is_a_prompt_error(encoder):
    with pytest.raises(PromptError, match="empty"):
        encoder.embed(np.zeros(0, dtype=np.float32), SR)


def test_mel_matches_librosa(encoder, recordings):
    librosa = pytest.importorskip("librosa")
    wav = recordings["heath"][:SR]
    ours = encoder.mel(torch.from_numpy(wav)).numpy()
    ref = librosa.feature.melspectrogram(y=wav, sr=SR, n_fft=400, hop_length=160, n_mels=40).T
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= 1e-4 * np.abs(ref).max()


def test_partial_slices():
    cfg = EncoderConfig()
    # 3 s: 301 frames, a step of round(16000 / 1.3 / 160) = 77 frames.
    assert partial_starts(3 * SR, cfg) == ([0, 77, 154], 154 * 160 + 160 * 160)
    # shorter than one partial: one zero-padded partial.
    assert partial_starts(SR // 2, cfg) == ([0], 160 * 160)


@pytest.mark.slow
def test_parity_with_resemblyzer(encoder, make_prompts):
    """Same preprocessed audio into Resemblyzer's VoiceEncoder and ours: cosine >= 0.999."""
    resemblyzer = pytest.importorskip("resemblyzer")
    reference = resemblyzer.VoiceEncoder("cpu", verbose=False)
    for name in ("cate_blanch.mp3", "cate_blanch_2.mp3", "heath_ledger.mp3"):
        wav = resemblyzer.preprocess_wav(make_prompts.gradio_audio(name))
        theirs = reference.embed_utterance(wav)
        assert cosine(encoder.embed_preprocessed(wav), theirs) >= 0.999, name


@pytest.mark.gpu
def test_cuda_matches_cpu(encoder, recordings):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    gpu = SpeakerEncoder.load(device="cuda")
    wav = recordings["cate"]
    emb = gpu.embed(wav, SR)
    assert isinstance(emb, np.ndarray)
    assert cosine(emb, encoder.embed(wav, SR)) > 0.9999


# --- cache --------------------------------------------------------------------------------

def test_embedding_cache_hit_returns_same_array(encoder, recordings):
    cache = EmbeddingCache(maxsize=2)
    first = embed_cached(encoder, recordings["cate"], SR, cache)
    again = embed_cached(encoder, recordings["cate"].copy(), SR, cache)
    assert again is first and (cache.hits, cache.misses) == (1, 1)
    assert not first.flags.writeable
    embed_cached(encoder, recordings["cate2"], SR, cache)
    embed_cached(encoder, recordings["heath"], SR, cache)
    assert len(cache) == 2                       # bounded: "cate" was evicted
    assert embed_cached(encoder, recordings["cate"], SR, cache) is not first
    cache.clear()
    assert len(cache) == 0


def test_audio_key_depends_on_samples_and_rate(recordings):
    wav = recordings["heath"]
    assert audio_key(wav, SR) == audio_key(wav.copy(), SR)
    assert audio_key(wav, SR) != audio_key(wav, 22050)
    changed = wav.copy()
    changed[1000] += 1e-3
    assert audio_key(changed, SR) != audio_key(wav, SR)


def test_lru_order_and_disabled_cache():
    cache: LruCache[int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1                   # "a" is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.get("b", -1) == -1
    off: LruCache[int] = LruCache(0)
    off.put("a", 1)
    assert len(off) == 0 and off.get("a") is None


def test_lru_is_bounded_under_threads():
    cache: LruCache[int] = LruCache(50)

    def work(offset: int) -> None:
        for i in range(2000):
            cache.put((offset, i % 120), i)
            cache.get((offset, (i * 7) % 120))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 50
