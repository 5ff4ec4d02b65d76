"""Chinese dialects as tone re-mapping of the Mandarin voice (官话 and nearby varieties).

    from cosyvoice.prosody.dialects import DIALECTS, dialect_controls, rendering_controls
    DIALECTS["sichuan"].tones                    # {1: "55", 2: "21", 3: "53", 4: "213"}
    zh.synthesize("今天天气很好。", controls=dialect_controls("sichuan"))   # controls only
    zh.synthesize("今天天气很好。", controls=rendering_controls("sichuan"))  # + exact contours

What it is: Mandarin text spoken with the *tone values* of a dialect. Each Mandarin tone
category (阴平 阳平 上声 去声) is given the dialect's Chao tone letters (1 = lowest … 5 =
highest pitch of the voice). Words, initials, finals and the dialect's own sandhi are *not*
changed: this is "Mandarin with a Sichuan melody", not Sichuanese. Entering tones (入声:
Taiyuan, Changsha, Nanchang) cannot be recovered from Mandarin text and are dropped; for the
Xiang and Gan varieties, whose 去声 splits by the historical voicing of the initial, one
value stands for both halves (marked ``approximate``).

How it is rendered, in two layers (both measured by bench/dialects.py, retired; its figures
are in bench/README.md):

1. :func:`dialect_controls` → :class:`~cosyvoice.acoustic.mandarin.ProsodyControls`: each
   syllable's toned final is replaced by the Mandarin tone whose *shape* matches the
   dialect value (level → 1, rising → 2, falling → 4, dipping → 2: the Baker voice's tone-3
   finals creak or go unvoiced in some contexts, e.g. 气 in 今天天气, and its tone 2 already
   dips before it rises; e.g. Sichuan 阳平 21 is spoken with a tone-4 phone), and its
   per-phone pitch is set to the value's start and end pitch (the final carries the
   start, the break after it the end: the model's audio lags
   its durations by about one phone, bench/README.md "Tone 2").
2. :func:`rendering_controls` (what the offline engine uses): the tone phones of layer 1
   (not its per-phone pitch, which made low values creak), vocoded, then the exact Chao
   contour of each syllable is imposed by pitch-tier resynthesis (Praat PSOLA via
   parselmouth) over the voiced part of the syllable's span from the model's own
   durations (its final plus the break after it).

Chao letters map onto the Baker voice's own F0 range (:data:`BAKER_SCALE`): letter 1 at
its 5th and letter 5 at its 95th F0 percentile over the pipeline's Chinese calibration
passage, equal steps in log frequency between.

Cantonese, Shanghainese, Minnan and Hakka are listed but not supported (see each entry's
``reason``); :func:`dialect_controls` and :func:`rendering_controls` refuse them with
:class:`UnsupportedDialectError`, never by speaking Mandarin silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np

from cosyvoice.acoustic.mandarin import (
    MandarinRender,
    ProsodyContext,
    ProsodyControls,
)
from cosyvoice.errors import TextError
from cosyvoice.frontend.zh_g2p import ZhPhones

logger = logging.getLogger(__name__)

TONE_NAMES = {1: "阴平", 2: "阳平", 3: "上声", 4: "去声"}
MANDARIN_TONES = {1: "55", 2: "35", 3: "214", 4: "51"}  # 普通话, for comparison


class UnsupportedDialectError(TextError):
    """A dialect this engine cannot speak (or does not know); the message lists those it can."""


@dataclass(frozen=True)
class Dialect:
    """One dialect: names, whether it can be rendered, and its tone values with a source."""

    key: str
    name_zh: str
    name_en: str
    supported: bool
    tones: dict[int, str] = field(default_factory=dict)  # Mandarin category → Chao letters
    source: str = ""
    reason: str = ""  # why not, when unsupported
    notes: str = ""
    approximate: bool = False


def _d(key, zh, en, tones, source, notes="", approximate=False) -> Dialect:
    t = dict(zip((1, 2, 3, 4), tones.split(), strict=True))
    return Dialect(key, zh, en, True, t, source, notes=notes, approximate=approximate)


def _no(key, zh, en, reason) -> Dialect:
    return Dialect(key, zh, en, False, reason=reason)


_NO_MODEL = ("这里没有{zh}的词汇/读音表和声学模型，只改声调会变成带口音的普通话，不是{zh}。"
             " / No {en} lexicon or acoustic model is available offline here; re-toning "
             "Mandarin would be accented Mandarin, not {en}.")

# Tone values (阴平 阳平 上声 去声). The city is the dialect's reference point. Sources:
# [FY] 北京大学中文系语言学教研室《汉语方音字汇》(第二版, 文字改革出版社 1989);
# [GL] 侯精一主编《现代汉语方言概论》(上海教育出版社 2002); [DC] 李荣主编《现代汉语
# 方言大词典》分卷 (江苏教育出版社 1993–1998); English Wikipedia articles as named.
# Written from those references as the author knows them (not re-checked against the
# books here); where sources differ, the variant chosen is said in notes.
DIALECTS: dict[str, Dialect] = {d.key: d for d in (
    _d("sichuan", "四川话（成都）", "Sichuanese (Chengdu)", "55 21 53 213",
       "[FY] 成都; Wikipedia 'Sichuanese Mandarin' (Chengdu); 四川大学《四川方言音系》1960",
       "上声 is also given as 42; 入声 merged into 阳平 in Chengdu (follows the Mandarin "
       "category of the character here)."),
    _d("chongqing", "重庆话", "Chongqing", "55 21 42 214",
       "Wikipedia 'Sichuanese Mandarin' (Chongqing); [GL] 西南官话"),
    _d("dongbei", "东北话（哈尔滨）", "Northeastern (Harbin)", "44 24 213 53",
       "[GL] 东北官话, 哈尔滨; Wikipedia 'Northeastern Mandarin'",
       "Shenyang has 33 35 213 53; the Harbin values are used."),
    _d("tianjin", "天津话", "Tianjin", "21 45 213 53",
       "Wikipedia 'Tianjin dialect'; [FY] 天津",
       "阴平 is also given as 11 and 上声 as 13."),
    _d("jinan", "济南话（山东）", "Jinan (Shandong)", "213 42 55 21",
       "[FY] 济南 (as cited by Wikipedia 'Jinan dialect'); 钱曾怡《济南方言词典》[DC]"),
    _d("zhengzhou", "郑州话（河南）", "Zhengzhou (Henan)", "24 42 53 31",
       "[GL] 中原官话, 郑州; Wikipedia 'Central Plains Mandarin'"),
    _d("xian", "西安话（陕西）", "Xi'an (Shaanxi)", "21 24 53 44",
       "[FY] 西安; 王军虎《西安方言词典》[DC]; Wikipedia 'Guanzhong dialect'",
       "阴平 is also given as 31 and 去声 as 55."),
    _d("lanzhou", "兰州话（甘肃）", "Lanzhou (Gansu)", "31 53 44 13",
       "[GL] 兰银官话, 兰州; Wikipedia 'Lan–Yin Mandarin'",
       "上声 is often written 442 (level with a fall at the end); rendered as 44."),
    _d("yinchuan", "银川话（宁夏）", "Yinchuan (Ningxia)", "44 53 53 13",
       "[GL] 兰银官话, 银川; 李树俨、张安生《银川方言词典》[DC]",
       "Three tones: 阳平 and 上声 have merged (53)."),
    _d("taiyuan", "太原话（山西，晋语）", "Taiyuan (Shanxi, Jin)", "11 11 53 45",
       "[FY] 太原; 沈明《太原方言词典》[DC]; Wikipedia 'Jin Chinese'",
       "Jin: 阴平 and 阳平 are one 平声 11. Its entering tones (阴入 2, 阳入 54) are dropped: "
       "Mandarin text does not say which characters had them.", approximate=True),
    _d("kunming", "昆明话（云南）", "Kunming (Yunnan)", "44 31 53 212",
       "[GL] 西南官话, 昆明; 张华文、毛玉玲《昆明方言词典》[DC]"),
    _d("guiyang", "贵阳话（贵州）", "Guiyang (Guizhou)", "55 21 42 13",
       "[GL] 西南官话, 贵阳; 汪平《贵阳方言词典》[DC]"),
    _d("wuhan", "武汉话（湖北）", "Wuhan (Hubei)", "55 213 42 35",
       "[FY] 武汉; 朱建颂《武汉方言词典》[DC]; Wikipedia 'Wuhan dialect'"),
    _d("changsha", "长沙话（湖南，湘语）", "Changsha (Hunan, Xiang)", "33 13 41 55",
       "[FY] 长沙; 鲍厚星等《长沙方言词典》[DC]; Wikipedia 'Changsha dialect'",
       "Xiang, approximate: 去声 splits into 阴去 55 and 阳去 21 by the historical voicing "
       "of the initial, which Mandarin text does not show; 阴去 55 is used for all. "
       "入声 24 is dropped. Words and finals stay Mandarin.", approximate=True),
    _d("nanchang", "南昌话（江西，赣语）", "Nanchang (Jiangxi, Gan)", "42 24 213 45",
       "[FY] 南昌; 熊正辉《南昌方言词典》[DC]; Wikipedia 'Gan Chinese'",
       "Gan, approximate: 去声 splits into 阴去 45 and 阳去 21 (by the historical initial; "
       "阴去 45 is used for all); 入声 (阴入 5, 阳入 21) is dropped. Words and finals stay "
       "Mandarin.", approximate=True),
    _no("cantonese", "广东话（粤语）", "Cantonese",
        "这里没有离线的粤语声学模型（PyPI 的 canto-tts 运行时要从模型库下载权重；espeak-ng 的 "
        "yue 只是共振峰合成）。用普通话音素拼读粤拼也不行：按 piper-tts 自带的 espeak-ng 粤语"
        "注音，校准文本 55 个音节里约四分之一（14 个）有普通话音库没有的 -p/-t/-k、-m 韵尾、"
        "oe/eo 元音或 ng- 声母，而且粤语有六个声调。 / No offline Cantonese acoustic model "
        "is available here (canto-tts on PyPI downloads its weights from a model hub at run "
        "time; espeak-ng's 'yue' voice is a formant synthesizer). Spelling Cantonese with "
        "Mandarin phones is no substitute: by piper-tts's bundled espeak-ng Cantonese "
        "phonemizer, a quarter of the syllables of the calibration passage (14 of 55) "
        "have a -p/-t/-k or -m coda, an oe/eo vowel or an "
        "ng- initial that the Mandarin phone set lacks, and Cantonese has six tones."),
    _no("shanghainese", "上海话（吴语）", "Shanghainese (Wu)",
        _NO_MODEL.format(zh="上海话", en="Shanghainese")),
    _no("minnan", "闽南话", "Southern Min (Hokkien)",
        _NO_MODEL.format(zh="闽南话", en="Southern Min")),
    _no("hakka", "客家话", "Hakka", _NO_MODEL.format(zh="客家话", en="Hakka")),
)}


def supported_keys() -> list[str]:
    return [k for k, d in DIALECTS.items() if d.supported]


def get_dialect(key: str) -> Dialect:
    """The supported dialect for ``key`` (canonical key, or its Chinese/English name).

    Raises :class:`UnsupportedDialectError` naming the supported dialects otherwise.
    """
    k = (key or "").strip()
    d = DIALECTS.get(k.lower()) or next(
        (d for d in DIALECTS.values()
         if k in (d.name_zh, d.name_en) or k == d.name_zh.split("（")[0]), None)
    names = "、".join(f"{DIALECTS[s].name_zh.split('（')[0]} ({s})" for s in supported_keys())
    if d is None:
        raise UnsupportedDialectError(
            f"不认识的方言“{key}”。支持：{names} / Unknown dialect {key!r}; supported: {names}")
    if not d.supported:
        raise UnsupportedDialectError(
            f"{d.name_zh} / {d.name_en} 暂不支持 (not supported): {d.reason} "
            f"支持的方言 / supported dialects: {names}")
    return d


# ---- Chao tone letters ------------------------------------------------------------------

def chao_points(value: str) -> tuple[np.ndarray, np.ndarray]:
    """Tone letters "213" → (times 0..1, letters): equally spaced turning points."""
    levels = np.array([int(c) for c in value], dtype=np.float64)
    if len(levels) == 1:
        levels = np.repeat(levels, 2)
    return np.linspace(0.0, 1.0, len(levels)), levels


def chao_shape(value: str) -> str:
    """The contour class of a tone value: "high level", "mid level", "low level",
    "rising", "high falling", "low falling" or "dipping"."""
    _, lv = chao_points(value)
    if len(lv) >= 3 and lv[1:-1].min() < min(lv[0], lv[-1]):
        return "dipping"
    start, end = lv[0], lv[-1]
    if end - start >= 1:
        return "rising"
    if start - end >= 1:
        return "high falling" if start >= 3.5 else "low falling"
    mean = lv.mean()
    return "high level" if mean >= 3.5 else ("low level" if mean < 2.5 else "mid level")


SHAPE_TONE = {"high level": 1, "mid level": 1, "low level": 1, "rising": 2, "dipping": 2,
              "high falling": 4, "low falling": 4}


def nearest_mandarin_tone(value: str) -> int:
    """The Mandarin tone (55 35 214 51) whose contour shape this value has."""
    return SHAPE_TONE[chao_shape(value)]


@dataclass(frozen=True)
class ChaoScale:
    """Chao letters 1–5 ↔ Hz: letter 1 at ``low_hz``, 5 at ``high_hz``, log-spaced."""

    low_hz: float
    high_hz: float

    def hz(self, letter: np.ndarray | float) -> np.ndarray:
        frac = (np.asarray(letter, dtype=np.float64) - 1.0) / 4.0
        return np.exp(np.log(self.low_hz) + frac * np.log(self.high_hz / self.low_hz))

    def letter(self, hz: np.ndarray | float) -> np.ndarray:
        h = np.asarray(hz, dtype=np.float64)
        return 1.0 + 4.0 * np.log(h / self.low_hz) / np.log(self.high_hz / self.low_hz)


# Measured by bench/dialects.py (retired; printed as "calibration"): 5th / 95th percentile of the
# Baker voice's F0 (Praat autocorrelation, 5 ms, 75–600 Hz) over the pipeline's Chinese
# calibration passage through FastSpeech2 → mel bridge → HiFi-GAN: 184.5 / 301.3 Hz.
BAKER_SCALE = ChaoScale(184.5, 301.3)
# The decoder's F0 input is z-scored Hz; a shift of ±1 on every phone moved the median F0
# of that passage by +35.4 / −38.0 Hz from 248.3 Hz (same run). Used to turn a target in
# Hz into the per-phone value: z = (hz − F0_Z0_HZ) / F0_HZ_PER_Z.
F0_Z0_HZ = 248.3
F0_HZ_PER_Z = 36.7


# ---- layer 1: tone phones and per-phone pitch -------------------------------------------

def tone_map(dialect: Dialect) -> dict[int, int]:
    return {cat: nearest_mandarin_tone(v) for cat, v in dialect.tones.items()}


def _phone_pitch(dialect: Dialect, scale: ChaoScale, only: set[int] | None = None):
    """A ProsodyControls.f0 callable: the final gets the value's start (the mean of its first
    half for a dipping value), the break after it the end; other phones keep predictions."""
    def control(ctx: ProsodyContext) -> np.ndarray:
        f0 = ctx.f0.astype(np.float64).copy()
        for i, syl in enumerate(ctx.syllables):
            value = dialect.tones.get(syl.tone)
            if value is None or (only is not None and i not in only):
                continue
            t, lv = chao_points(value)
            first = np.interp(np.linspace(0, 0.5, 5), t, lv).mean()
            for k, letter in ((syl.start + 1, first), (syl.end, lv[-1])):
                if k < len(f0):
                    f0[k] = (float(scale.hz(letter)) - F0_Z0_HZ) / F0_HZ_PER_Z
        return f0
    return control


def controls_for(dialect: Dialect, scale: ChaoScale = BAKER_SCALE,
                 only: set[int] | None = None) -> ProsodyControls:
    """Layer-1 controls; ``only`` restricts them to those syllable indices (benchmarks)."""
    return ProsodyControls(f0=_phone_pitch(dialect, scale, only), tone_map=tone_map(dialect))


def dialect_controls(key: str) -> ProsodyControls:
    """Controls that make MandarinAcoustic.synthesize/render speak with ``key``'s tones.

    Controls alone see the G2P's surface tones (after Mandarin sandhi) and reach the value's
    shape less often (bench/dialects.py, retired, "controls only" column: rising and low level
    values mostly miss); :func:`rendering_controls` is the full rendering. Raises
    :class:`UnsupportedDialectError` (listing the supported ones) for an unknown or
    unsupported dialect.
    """
    return controls_for(get_dialect(key))


# ---- layer 2: exact contours by PSOLA ---------------------------------------------------

def syllable_spans(render: MandarinRender) -> list[tuple[float, float]]:
    """(start, end) seconds per syllable: its final and the break after it."""
    edges = np.concatenate([[0], np.cumsum(render.durations)]) * render.frame_seconds
    n = len(render.durations)
    return [(float(edges[s.start + 1]), float(edges[min(s.end + 1, n)]))
            for s in render.syllables]


def target_tier(render: MandarinRender, dialect: Dialect, scale: ChaoScale,
                only: set[int] | None = None, voiced: np.ndarray | None = None,
                step: float = 0.01) -> list[tuple[float, float]]:
    """(time s, Hz) points of each re-toned syllable's Chao contour.

    The contour spans the syllable's voiced part (``voiced``: times of the voice's own
    pitch points, e.g. glottal pulses) inside its model span: the tone lives on the rime,
    and a contour laid over the whole span would lose its ends to the unvoiced initial.
    """
    points = []
    for i, (syl, (t0, t1)) in enumerate(zip(render.syllables, syllable_spans(render),
                                            strict=True)):
        value = dialect.tones.get(syl.tone)
        if value is None or (only is not None and i not in only):
            continue
        if voiced is not None:
            inside = voiced[(voiced >= t0) & (voiced <= t1)]
            if len(inside) >= 2 and inside[-1] - inside[0] >= 3 * step:
                t0, t1 = float(inside[0]), float(inside[-1])
        if t1 - t0 < 2 * step:
            continue
        t, lv = chao_points(value)
        ts = np.linspace(t0, t1, max(2, int(round((t1 - t0) / step)) + 1))
        hz = scale.hz(np.interp((ts - t0) / (t1 - t0), t, lv))
        points.append((ts, hz))
    return points


def impose_contours(wav: np.ndarray, sr: int, render: MandarinRender, dialect: Dialect,
                    scale: ChaoScale = BAKER_SCALE, only: set[int] | None = None) -> np.ndarray:
    """PSOLA: the voice's own F0 outside the re-toned syllables, their Chao contour inside.

    ``wav`` (T,) float at ``sr`` is the vocoded ``render``; returns the same length.
    """
    import parselmouth
    from parselmouth.praat import call
    from parselmouth.praat import run as run_script

    from cosyvoice.voice.adapter import _PRAAT_RANDOM, PSOLA_SEED

    snd = parselmouth.Sound(np.asarray(wav, dtype=np.float64), sampling_frequency=sr)
    with _PRAAT_RANDOM:
        run_script(f"random_initializeWithSeedUnsafelyButPredictably ({PSOLA_SEED})")
        manip = call(snd, "To Manipulation", 0.01, 75, 600)
        own = call(manip, "Extract pitch tier")
        n_own = int(call(own, "Get number of points"))
        times = np.array([call(own, "Get time from index", k) for k in range(1, n_own + 1)])
        targets = target_tier(render, dialect, scale, only, voiced=times)
        if not targets:
            return np.asarray(wav, dtype=np.float32)
        tier = call("Create PitchTier", "dialect", snd.xmin, snd.xmax)
        for k, t in enumerate(times, start=1):
            if not any(ts[0] - 0.02 <= t <= ts[-1] + 0.02 for ts, _ in targets):
                call(tier, "Add point", t, call(own, "Get value at index", k))
        for ts, hz in targets:
            for t, h in zip(ts, hz, strict=True):
                call(tier, "Add point", float(t), float(h))
        call([manip, tier], "Replace pitch tier")
        out = call(manip, "Get resynthesis (overlap-add)")
    y = np.asarray(out.values[0], dtype=np.float32)
    return _fit(y, len(wav))


def _fit(y: np.ndarray, n: int) -> np.ndarray:
    return y[:n] if len(y) >= n else np.pad(y, (0, n - len(y)))


def citation_tones(zh: ZhPhones) -> ZhPhones:
    """Undo Mandarin's own tone sandhi in the syllables' tone categories.

    Dialects do not share Mandarin's 3-3 sandhi or its 一/不 changes (你好 is 53 53 in
    Chengdu, not 21 53), so the category a dialect value is chosen by is the citation
    tone: a surface tone-2 syllable whose character reads with tone 3 (its default
    reading, same syllable) is 上声 again; 一 is 阴平 and 不 去声. Phones are unchanged.
    """
    from pypinyin import Style, pinyin

    syllables = []
    for syl in zh.syllables:
        tone, ch = syl.tone, syl.hanzi[:1]
        if ch == "一" and tone in (2, 4):
            tone = 1
        elif ch == "不" and tone == 2:
            tone = 4
        elif tone == 2 and ch:
            default = pinyin(ch, style=Style.TONE3, neutral_tone_with_five=True)[0][0]
            if default[-1:] == "3" and default[:-1] == syl.pinyin[:-1]:
                tone = 3
        syllables.append(replace(syl, tone=tone))
    return ZhPhones(zh.text, list(zh.phones), list(zh.ids), syllables)


def rendering_controls(key: str, controls: ProsodyControls | None = None) -> ProsodyControls:
    """Mandarin backend controls that speak with dialect ``key``'s tones: tone phones by
    citation category (:func:`citation_tones`, not Mandarin's sandhi output), then each
    syllable's F0 replaced by its exact contour after the vocoder (the ``after`` hook).

    ``controls`` (e.g. an emotion's) supply durations, energy, F0 and the scalars; a
    caller's ``pitch_scale``/``pitch_shift`` move the Chao scale by the same ratio, so a
    higher-pitched emotion stays higher. Raises :class:`UnsupportedDialectError` for a
    dialect it cannot speak.
    """
    dialect = get_dialect(key)
    # Tone phones only: the per-phone pitch of layer 1 is left out here because the
    # contours replace it, and its low targets (letters 1–2) made the model's voice creak
    # or go unvoiced, which PSOLA cannot repair (bench/dialects.py, retired: dipping 213 matched
    # 1/3 with it, 3/3 without, in the development run).
    out = ProsodyControls(tone_map=tone_map(dialect), phones=citation_tones)
    if controls is not None:
        out.durations, out.energy, out.f0 = controls.durations, controls.energy, controls.f0
        out.pitch_scale, out.pitch_shift = controls.pitch_scale, controls.pitch_shift
        out.energy_scale = controls.energy_scale
    scale = _shifted_scale(controls)
    out.after = lambda wav, sr, render: impose_contours(wav, sr, render, dialect, scale)
    return out


def _shifted_scale(controls: ProsodyControls | None) -> ChaoScale:
    """The Chao scale moved the way a caller's pitch scalars move the model's F0."""
    if controls is None or (controls.pitch_scale == 1.0 and controls.pitch_shift == 0.0):
        return BAKER_SCALE
    # z' = z·scale + shift at the passage median (z ≈ 0) ≈ shift; ratio in Hz:
    z_mid = (np.sqrt(BAKER_SCALE.low_hz * BAKER_SCALE.high_hz) - F0_Z0_HZ) / F0_HZ_PER_Z
    z_new = z_mid * controls.pitch_scale + controls.pitch_shift
    ratio = (F0_Z0_HZ + F0_HZ_PER_Z * z_new) / (F0_Z0_HZ + F0_HZ_PER_Z * z_mid)
    ratio = float(np.clip(ratio, 0.5, 2.0))
    return ChaoScale(BAKER_SCALE.low_hz * ratio, BAKER_SCALE.high_hz * ratio)
