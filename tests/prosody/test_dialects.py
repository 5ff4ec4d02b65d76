"""Dialect tone tables, controls and rendering with the real Mandarin model and HiFi-GAN."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice.acoustic.mandarin import ProsodyContext, ProsodyControls
from cosyvoice.errors import TextError
from cosyvoice.frontend.zh_g2p import zh_to_phones
from cosyvoice.prosody.dialects import (
    BAKER_SCALE,
    DIALECTS,
    F0_HZ_PER_Z,
    F0_Z0_HZ,
    ChaoScale,
    UnsupportedDialectError,
    chao_shape,
    citation_tones,
    dialect_controls,
    get_dialect,
    rendering_controls,
    supported_keys,
    syllable_spans,
    tone_map,
)

CANONICAL = ("sichuan chongqing dongbei tianjin jinan zhengzhou xian lanzhou yinchuan taiyuan "
             "kunming guiyang wuhan changsha nanchang cantonese shanghainese minnan hakka").split()
SENTENCE = "今天天气很好。"  # jin1 tian1 tian1 qi4 hen2 hao3 (很 takes 3-3 sandhi)


# ---- tables -----------------------------------------------------------------------------

def test_canonical_keys_are_exactly_the_documented_ones():
    assert list(DIALECTS) == CANONICAL
    assert all(DIALECTS[k].key == k for k in CANONICAL)


@pytest.mark.parametrize("key", CANONICAL)
def test_each_entry_is_well_formed(key):
    d = DIALECTS[key]
    assert d.name_zh and d.name_en
    if d.supported:
        assert sorted(d.tones) == [1, 2, 3, 4]
        for value in d.tones.values():
            assert 1 <= len(value) <= 3 and set(value) <= set("12345"), value
        assert d.source and not d.reason
    else:
        assert not d.tones and len(d.reason) > 40


def test_supported_are_the_fifteen_mandarin_family_dialects():
    assert supported_keys() == CANONICAL[:15]
    assert {k for k in CANONICAL if DIALECTS[k].approximate} == {"taiyuan", "changsha",
                                                                  "nanchang"}
    assert "入" in DIALECTS["taiyuan"].notes  # the dropped entering tone is said


def test_tables_hold_the_cited_values():
    assert DIALECTS["sichuan"].tones == {1: "55", 2: "21", 3: "53", 4: "213"}
    assert DIALECTS["jinan"].tones == {1: "213", 2: "42", 3: "55", 4: "21"}
    assert DIALECTS["wuhan"].tones == {1: "55", 2: "213", 3: "42", 4: "35"}
    assert DIALECTS["yinchuan"].tones[2] == DIALECTS["yinchuan"].tones[3]  # merged


@pytest.mark.parametrize("value,shape", [
    ("55", "high level"), ("44", "high level"), ("33", "mid level"), ("11", "low level"),
    ("35", "rising"), ("13", "rising"), ("45", "rising"), ("53", "high falling"),
    ("42", "high falling"), ("21", "low falling"), ("31", "low falling"),
    ("213", "dipping"), ("212", "dipping"), ("214", "dipping")])
def test_chao_shapes(value, shape):
    assert chao_shape(value) == shape


def test_tone_phones_follow_the_value_shape():
    # level → 1, rising → 2, falling → 4, dipping → 2 (Baker's tone-3 finals creak)
    assert tone_map(DIALECTS["sichuan"]) == {1: 1, 2: 4, 3: 4, 4: 2}
    assert tone_map(DIALECTS["dongbei"]) == {1: 1, 2: 2, 3: 2, 4: 4}
    assert tone_map(DIALECTS["jinan"]) == {1: 2, 2: 4, 3: 1, 4: 4}


def test_chao_scale_maps_letters_onto_the_measured_range():
    s = ChaoScale(184.5, 301.3)
    assert s.hz(1) == pytest.approx(184.5) and s.hz(5) == pytest.approx(301.3)
    assert s.hz(3) == pytest.approx(np.sqrt(184.5 * 301.3))
    assert s.letter(s.hz(np.array([1.5, 4.2]))) == pytest.approx([1.5, 4.2])


# ---- refusals ---------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["cantonese", "shanghainese", "minnan", "hakka", "klingon", ""])
def test_unsupported_or_unknown_is_refused_with_the_supported_list(key):
    with pytest.raises(UnsupportedDialectError) as e:
        dialect_controls(key)
    assert isinstance(e.value, TextError)
    msg = str(e.value)
    assert "sichuan" in msg and "四川话" in msg and "nanchang" in msg
    if key in DIALECTS:
        assert DIALECTS[key].name_en in msg and DIALECTS[key].reason[:20] in msg


def test_names_resolve_to_their_dialect():
    assert get_dialect("四川话").key == "sichuan"
    assert get_dialect(" Sichuan ").key == "sichuan"
    assert get_dialect("Wuhan (Hubei)").key == "wuhan"


# ---- controls (no model needed) ---------------------------------------------------------

def _context(text: str) -> ProsodyContext:
    zh = zh_to_phones(text)
    n = len(zh.phones)
    return ProsodyContext(zh.phones, zh.syllables, np.full(n, 5), np.zeros(n), np.zeros(n),
                          0.0125)


@pytest.mark.parametrize("key", CANONICAL[:15])
def test_controls_set_each_final_and_break_to_the_value_ends(key):
    d = DIALECTS[key]
    controls = dialect_controls(key)
    assert isinstance(controls, ProsodyControls) and controls.tone_map == tone_map(d)
    ctx = _context(SENTENCE)
    f0 = controls.f0(ctx)
    for syl in ctx.syllables:
        value = d.tones[syl.tone]
        end_hz = F0_Z0_HZ + F0_HZ_PER_Z * f0[syl.end]
        assert end_hz == pytest.approx(BAKER_SCALE.hz(int(value[-1])), rel=1e-6)
        start_hz = F0_Z0_HZ + F0_HZ_PER_Z * f0[syl.start + 1]
        if len(value) == 2:  # start = mean of the first half of the contour
            assert 1 - 1e-9 <= BAKER_SCALE.letter(start_hz) <= 5 + 1e-9
            assert (start_hz > end_hz) == (value[0] > value[1])
    assert f0[0] == 0.0  # sil keeps the prediction


# ---- the real model ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def zh():
    from cosyvoice.acoustic.fastspeech2 import default_model_dir
    from cosyvoice.acoustic.mandarin import MandarinAcoustic
    from cosyvoice.vocoder.loader import HifiGanVocoder

    if not (default_model_dir() / "fastspeech2.pt").exists():
        pytest.fail("models/zh_fastspeech2 is missing: run the converter (bash run.sh does)")
    vocoder = HifiGanVocoder.load()
    zh = MandarinAcoustic.load(mel_config=vocoder.mel_config)
    zh.test_vocoder = vocoder
    return zh


def render_dialect(zh, text: str, key: str):
    """One sentence in dialect ``key`` as the offline engine speaks it: the Mandarin
    backend with the dialect's rendering controls, vocoded, contours imposed."""
    import dataclasses

    from cosyvoice.acoustic.base import to_audio

    out = zh.synthesize(text, controls=rendering_controls(key))
    return dataclasses.replace(out, wav=to_audio(out, zh.test_vocoder.vocode))


def test_render_with_controls_speaks_the_substituted_tone_phones(zh):
    plain = zh.render(SENTENCE)
    r = zh.render(SENTENCE, controls=dialect_controls("sichuan"))
    finals = [r.phones[s.start + 1] for s in r.syllables]
    # 今天天 阴平 → 1, 气 去声 213 → 2, 很 (阳平 after sandhi) 21 → 4, 好 上声 53 → 4
    assert finals == ["in1", "ian1", "ian1", "i2", "en4", "ao4"]
    assert [s.tone for s in r.syllables] == [s.tone for s in plain.syllables]
    hao = r.syllables[-1]
    assert r.f0[hao.start + 1] > r.f0[hao.end]  # 53 falls: final high, break low


def test_citation_tones_undo_mandarin_sandhi():
    got = citation_tones(zh_to_phones("你很好，一起去，不要。"))
    assert [s.pinyin for s in got.syllables] == ["ni2", "hen2", "hao3", "yi4", "qi3", "qu4",
                                                 "bu2", "yao4"]  # phones stay Mandarin
    assert [s.tone for s in got.syllables] == [3, 3, 3, 1, 3, 4, 4, 4]
    assert [s.tone for s in citation_tones(zh_to_phones("银行行长。")).syllables] == [2, 2, 2, 3]


def test_render_dialect_tones_by_citation_category(zh):
    out = render_dialect(zh, "你好。", "sichuan")  # 上声 53 twice, not 阳平 21 + 上声
    finals = [p for p in out.phonemes if p[-1].isdigit() and p[:-1] in ("i", "ao")]
    assert finals == ["i4", "ao4"]


def _letters(wav, sr, span):
    import parselmouth

    pitch = parselmouth.Sound(wav.astype(np.float64), sr).to_pitch_ac(
        time_step=0.005, pitch_floor=75, pitch_ceiling=600)
    t, f0 = pitch.xs(), pitch.selected_array["frequency"]
    v = (t >= span[0]) & (t <= span[1]) & (f0 > 0)
    return BAKER_SCALE.letter(f0[v])


@pytest.mark.parametrize("key", ["sichuan", "jinan", "taiyuan"])
def test_render_dialect_gives_each_syllable_its_contour(zh, key):
    d = DIALECTS[key]
    out = render_dialect(zh, SENTENCE, key)
    r = zh.render_phones(citation_tones(zh.g2p(SENTENCE)),
                         controls=ProsodyControls(tone_map=tone_map(d)))
    assert out.sample_rate == 22050 and out.phonemes == r.phones
    checked = 0
    for syl, span in zip(r.syllables, syllable_spans(r), strict=True):
        x = _letters(out.wav, out.sample_rate, span)
        if len(x) < 8:
            continue
        value = d.tones[syl.tone]
        third = len(x) // 3
        start, end, mid = x[:third].mean(), x[-third:].mean(), x[third:-third].mean()
        want = np.array([int(c) for c in value], float)
        assert abs(x.mean() - want.mean()) < 1.0, (syl.pinyin, value, x.round(1))
        shape = chao_shape(value)
        if shape == "dipping":
            assert mid < min(start, end), (syl.pinyin, value, x.round(1))
        elif shape in ("rising", "high falling", "low falling"):
            assert np.sign(end - start) == np.sign(want[-1] - want[0]), (syl.pinyin, value)
        checked += 1
    assert checked >= 4


def test_render_dialect_is_deterministic_and_refuses_before_work(zh):
    a = render_dialect(zh, "你好。", "wuhan")
    b = render_dialect(zh, "你好。", "wuhan")
    assert np.array_equal(a.wav, b.wav)
    with pytest.raises(UnsupportedDialectError, match="Cantonese"):
        render_dialect(zh, "你好。", "cantonese")
