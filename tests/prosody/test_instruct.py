"""The instruction parser: a table of Chinese and English phrasings with exact results."""

from __future__ import annotations

import pytest

from cosyvoice.prosody.instruct import (
    DIALECTS,
    EMOTIONS,
    PITCH_RANGE,
    SPEED_RANGE,
    VOLUME_RANGE,
    parse_instruction,
)

A_BIT_FASTER = 1.15  # 1 + 0.3 × 0.5
FASTER = 1.3
MUCH_FASTER = 1.45
SLOWER = 1 / 1.3
A_BIT_SLOWER = 1 / 1.15
MUCH_SLOWER = 1 / 1.45
LOUDER = 10 ** (5 / 20)
A_BIT_LOUDER = 10 ** (2.5 / 20)
MUCH_LOUDER = 10 ** (7.5 / 20)
QUIETER = 1 / LOUDER
A_BIT_QUIETER = 1 / A_BIT_LOUDER

# (instruction, expected fields); fields not named must stay neutral, and nothing may be
# left unknown unless "unknown" is given.
CASES = [
    # dialects, Chinese
    ("用四川话说这句话", {"dialect": "sichuan"}),
    ("请用广东话表达", {"dialect": "cantonese"}),
    ("用粤语说", {"dialect": "cantonese"}),
    ("请用川话讲", {"dialect": "sichuan"}),
    ("用重庆话", {"dialect": "chongqing"}),
    ("东北话", {"dialect": "dongbei"}),
    ("用天津话说一下", {"dialect": "tianjin"}),
    ("山东话", {"dialect": "jinan"}),
    ("济南口音", {"dialect": "jinan"}),
    ("用河南话说", {"dialect": "zhengzhou"}),
    ("陕西话", {"dialect": "xian"}),
    ("西安方言", {"dialect": "xian"}),
    ("甘肃话", {"dialect": "lanzhou"}),
    ("宁夏话", {"dialect": "yinchuan"}),
    ("用山西话朗读", {"dialect": "taiyuan"}),
    ("云南话", {"dialect": "kunming"}),
    ("贵州话", {"dialect": "guiyang"}),
    ("湖北话", {"dialect": "wuhan"}),
    ("用武汉话说", {"dialect": "wuhan"}),
    ("湖南话", {"dialect": "changsha"}),
    ("长沙话", {"dialect": "changsha"}),
    ("江西话", {"dialect": "nanchang"}),
    ("上海话", {"dialect": "shanghainese"}),
    ("用闽南话说", {"dialect": "minnan"}),
    ("台语", {"dialect": "minnan"}),
    ("客家话", {"dialect": "hakka"}),
    ("用普通话说", {}),
    # dialects, English
    ("in Sichuanese", {"dialect": "sichuan"}),
    ("speak Cantonese", {"dialect": "cantonese"}),
    ("with a Sichuan accent", {"dialect": "sichuan"}),
    ("Shanghainese please", {"dialect": "shanghainese"}),
    ("Hokkien", {"dialect": "minnan"}),
    ("in Hakka", {"dialect": "hakka"}),
    ("northeastern dialect", {"dialect": "dongbei"}),
    # CosyVoice3's own form
    ("You are a helpful assistant. 请用四川话表达。<|endofprompt|>", {"dialect": "sichuan"}),
    ("You are a helpful assistant. 请用广东话表达。<|endofprompt|>", {"dialect": "cantonese"}),
    ("You are a helpful assistant. 请非常开心地说一句话。<|endofprompt|>",
     {"emotion": "happy", "intensity": 1.5}),
    ("You are a helpful assistant. 请用尽可能快地语速说一句话。<|endofprompt|>",
     {"speed": FASTER, "unknown": ["尽可能"]}),
    # emotions, Chinese
    ("悲伤地朗读", {"emotion": "sad"}),
    ("开心地说", {"emotion": "happy"}),
    ("高兴一点", {"emotion": "happy", "intensity": 0.5}),
    ("开心一些，快一点", {"emotion": "happy", "intensity": 0.5, "speed": A_BIT_FASTER}),
    ("快乐的语气", {"emotion": "happy"}),
    ("很难过", {"emotion": "sad", "intensity": 1.5}),
    ("伤心地说", {"emotion": "sad"}),
    ("生气地说", {"emotion": "angry"}),
    ("非常愤怒", {"emotion": "angry", "intensity": 1.5}),
    ("惊讶的语气", {"emotion": "surprised"}),
    ("吃惊地说", {"emotion": "surprised"}),
    ("害怕地说", {"emotion": "fearful"}),
    ("带着恐惧", {"emotion": "fearful"}),
    ("厌恶的语气", {"emotion": "disgusted"}),
    ("有点嫌弃", {"emotion": "disgusted", "intensity": 0.5}),
    ("温柔地说", {"emotion": "gentle"}),
    ("平静地朗读", {"emotion": "calm"}),
    ("兴奋地说", {"emotion": "excited"}),
    ("激动的语气", {"emotion": "excited"}),
    ("严肃地说", {"emotion": "serious"}),
    ("愉快地朗读", {"emotion": "happy"}),  # 快 inside 愉快 is not "faster"
    # emotions, English
    ("speak happily", {"emotion": "happy"}),
    ("sad", {"emotion": "sad"}),
    ("very angry", {"emotion": "angry", "intensity": 1.5}),
    ("a bit surprised", {"emotion": "surprised", "intensity": 0.5}),
    ("scared", {"emotion": "fearful"}),
    ("in a disgusted tone", {"emotion": "disgusted"}),
    ("calmly", {"emotion": "calm"}),
    ("gently please", {"emotion": "gentle"}),
    ("excitedly", {"emotion": "excited"}),
    ("in a serious voice", {"emotion": "serious"}),
    ("cheerful", {"emotion": "happy"}),
    ("extremely sad", {"emotion": "sad", "intensity": 1.5}),
    # speed
    ("快一点", {"speed": A_BIT_FASTER}),
    ("慢一点", {"speed": A_BIT_SLOWER}),
    ("用很慢的语速", {"speed": MUCH_SLOWER}),
    ("语速快一点", {"speed": A_BIT_FASTER}),
    ("语速再慢些", {"speed": A_BIT_SLOWER}),
    ("语速 1.5 倍", {"speed": 1.5}),
    ("语速1.2倍", {"speed": 1.2}),
    ("2倍速", {"speed": 2.0}),
    ("语速为零点八", {"speed": 0.8}),
    ("speed 0.8x", {"speed": 0.8}),
    ("speed 0.8", {"speed": 0.8}),
    ("1.5x speed", {"speed": 1.5}),
    ("a bit faster", {"speed": A_BIT_FASTER}),
    ("much slower", {"speed": MUCH_SLOWER}),
    ("faster", {"speed": FASTER}),
    ("slowly", {"speed": SLOWER}),
    ("speed up", {"speed": FASTER}),
    ("very fast", {"speed": MUCH_FASTER}),
    # volume
    ("小声一点", {"volume": A_BIT_QUIETER}),
    ("大声", {"volume": LOUDER}),
    ("很大声", {"volume": MUCH_LOUDER}),
    ("轻声说", {"volume": QUIETER}),
    ("声音大一点", {"volume": A_BIT_LOUDER}),
    ("音量 2 倍", {"volume": 2.0}),
    ("音量0.5倍", {"volume": 0.5}),
    ("louder", {"volume": LOUDER}),
    ("a bit quieter", {"volume": A_BIT_QUIETER}),
    ("whisper", {"volume": QUIETER}),
    ("volume 1.5", {"volume": 1.5}),
    ("loud voice", {"volume": LOUDER}),
    # pitch
    ("higher pitch", {"pitch": 3.0}),
    ("a bit higher", {"pitch": 1.5}),
    ("lower", {"pitch": -3.0}),
    ("deep voice", {"pitch": -3.0}),
    ("声音低沉一些", {"pitch": -1.5}),
    ("音调高一点", {"pitch": 1.5}),
    ("提高音调", {"pitch": 3.0}),
    ("升高两个半音", {"pitch": 2.0}),
    ("降低3个半音", {"pitch": -3.0}),
    ("pitch +4 st", {"pitch": 4.0}),
    ("pitch -2", {"pitch": -2.0}),
    ("up 5 semitones", {"pitch": 5.0}),
    ("2 semitones lower", {"pitch": -2.0}),
    ("高音", {"pitch": 3.0}),
    # combinations
    ("speak happily and a bit faster", {"emotion": "happy", "speed": A_BIT_FASTER}),
    ("angry, loud voice", {"emotion": "angry", "volume": LOUDER}),
    ("非常开心，语速快一点，大声", {"emotion": "happy", "intensity": 1.5,
                                  "speed": A_BIT_FASTER, "volume": LOUDER}),
    ("用东北口音，生气地说", {"dialect": "dongbei", "emotion": "angry"}),
    ("用四川话，开心地，慢一点", {"dialect": "sichuan", "emotion": "happy",
                                "speed": A_BIT_SLOWER}),
    ("very sad and much slower", {"emotion": "sad", "intensity": 1.5, "speed": MUCH_SLOWER}),
    ("gentle, quiet and a bit lower", {"emotion": "gentle", "volume": QUIETER,
                                       "pitch": -1.5}),
    ("excited, higher pitch, speed 1.2", {"emotion": "excited", "pitch": 3.0, "speed": 1.2}),
    ("悲伤地朗读，小声一点，声音低沉一些", {"emotion": "sad", "volume": A_BIT_QUIETER,
                                         "pitch": -1.5}),
    ("温柔地，语速 0.9 倍", {"emotion": "gentle", "speed": 0.9}),
    ("Cantonese, happy", {"dialect": "cantonese", "emotion": "happy"}),
    # unknown words are reported, fillers are not
    ("speak like a pirate", {"unknown": ["pirate"]}),
    ("像机器人一样说", {"unknown": ["像机器人一样"]}),
    ("happily with robotic echo", {"emotion": "happy", "unknown": ["robotic", "echo"]}),
    ("开心地唱歌", {"emotion": "happy", "unknown": ["唱歌"]}),
    ("blah", {"unknown": ["blah"]}),
    ("用火星话说", {"unknown": ["火星话"]}),
    ("speed 7 and 3", {"speed": 2.0, "unknown": ["3"]}),
    ("please speak this sentence in a voice", {}),
    ("请用这种语气说这句话", {"unknown": ["这种"]}),
]

# Contradictions and clamps: the field stays neutral / clamped, and a note explains.
NOTED = [
    ("faster and slower", "speed", 1.0, "contradictory"),
    ("快一点又慢一点", "speed", 1.0, "矛盾"),
    ("louder but quieter", "volume", 1.0, "contradictory"),
    ("higher and lower", "pitch", 0.0, "contradictory"),
    ("语速 3 倍", "speed", SPEED_RANGE[1], "outside"),
    ("speed 0.2x", "speed", SPEED_RANGE[0], "outside"),
    ("音量 10 倍", "volume", VOLUME_RANGE[1], "outside"),
    ("pitch +20 semitones", "pitch", PITCH_RANGE[1], "outside"),
    ("happy and sad", "emotion", "happy", "several emotions"),
    ("用四川话还是粤语", "dialect", "sichuan", "several dialects"),
    ("speed 0", "speed", 1.0, "not positive"),
]

NEUTRAL = {"emotion": None, "intensity": 1.0, "speed": 1.0, "volume": 1.0, "pitch": 0.0,
           "dialect": None, "unknown": []}


@pytest.mark.parametrize("text,expected", CASES, ids=[c[0] for c in CASES])
def test_phrasing(text, expected):
    ins = parse_instruction(text)
    want = {**NEUTRAL, **expected}
    got = {k: getattr(ins, k) for k in want}
    for key in ("speed", "volume", "pitch", "intensity"):
        got[key] = round(got[key], 3)
        want[key] = round(want[key], 3)
    assert got == want, ins
    if not ins.is_neutral or ins.dialect:
        assert ins.understood


@pytest.mark.parametrize("text,name,value,note", NOTED, ids=[c[0] for c in NOTED])
def test_contradictions_and_clamps_are_noted(text, name, value, note):
    ins = parse_instruction(text)
    got = getattr(ins, name)
    assert (round(got, 3) if isinstance(got, float) else got) == value, ins
    assert any(note in n for n in ins.notes), ins.notes


def test_table_size():
    assert len(CASES) + len(NOTED) >= 80


def test_messages_say_what_was_not_understood_in_both_languages():
    msgs = parse_instruction("开心地 pirate").messages()
    assert any(m.startswith("instruction understood: happy") for m in msgs), msgs
    assert any("not understood: pirate" in m and "未能理解：pirate" in m for m in msgs), msgs


def test_every_dialect_key_is_reachable_and_emotions_are_enough():
    reached = {parse_instruction(t).dialect for t, e in CASES if "dialect" in e}
    assert set(DIALECTS) <= reached
    assert len(EMOTIONS) >= 8


def test_ranges_match_the_pipeline():
    from cosyvoice import pipeline

    assert SPEED_RANGE == pipeline.SPEED_RANGE


def test_empty_and_boilerplate_only_are_neutral():
    for text in ("", "   ", "You are a helpful assistant.<|endofprompt|>"):
        ins = parse_instruction(text)
        assert ins.is_neutral and not ins.unknown and not ins.understood
