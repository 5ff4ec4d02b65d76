"""UI strings in English and Chinese. Keys are stable; the UI switches between columns."""

from __future__ import annotations

LANGS = ("en", "zh")

TEXTS: dict[str, tuple[str, str]] = {
    "title": (
        "# CosyVoice WebUI\nOffline voice-cloning text-to-speech studio",
        "# CosyVoice WebUI\n离线语音克隆文本转语音工作室",
    ),
    "limits": (
        "This offline engine speaks **English** with one bundled neural voice. Cloning "
        "moves that voice toward your prompt's pitch, timbre and formants: it approximates "
        "a voice, it does not reproduce it exactly.",
        "离线引擎目前用内置神经音色朗读**英文**。复刻会把音色的音高、音色和共振峰向你的参考录音靠拢："
        "它是近似，而非完全复制。",
    ),
    "ui_lang": ("Interface language", "界面语言"),
    "mode": ("Mode", "推理模式"),
    "mode_preset": ("Preset voice", "预训练音色"),
    "mode_clone": ("3-second cloning", "3s极速复刻"),
    "step_preset": (
        "Step 1: choose a voice. Step 2: type the text. Step 3: press Generate.",
        "第一步：选择音色。第二步：输入合成文本。第三步：点击生成音频。",
    ),
    "step_clone": (
        "Step 1: upload or record 3–30 s of clear speech (one speaker). Step 2: type the "
        "text. Step 3: press Generate.",
        "第一步：上传或录制3–30秒清晰的单人语音。第二步：输入合成文本。第三步：点击生成音频。",
    ),
    "text": ("Text to synthesize", "输入合成文本"),
    "text_ph": ("Type English text here…", "在此输入英文文本……"),
    "voice": ("Preset voice", "选择预训练音色"),
    "prompt": ("Prompt recording (3–30 s)", "参考音频（3–30秒）"),
    "prompt_text": ("Prompt transcript (optional)", "参考音频文本（可选）"),
    "prompt_text_ph": (
        "What the prompt says. Optional; kept with saved voices.",
        "参考音频中说的话。可选。",
    ),
    "speed": ("Speed", "语速"),
    "seed": ("Seed (empty = random)", "随机种子（留空为随机）"),
    "dice": ("🎲 New seed", "🎲 随机种子"),
    "strength": ("Similarity strength (0 = unchanged voice, 1 = full)",
                 "相似度强度（0不变，1最强）"),
    "generate": ("Generate", "生成音频"),
    "output": ("Result", "合成音频"),
    "status": ("Status", "状态"),
    "ready": ("Ready.", "就绪。"),
    "done": ("Done: {audio:.1f} s of audio in {elapsed:.1f} s (RTF {rtf:.2f}), "
             "{sentences} sentence(s). Saved as `{name}`.",
             "完成：{audio:.1f} 秒音频，用时 {elapsed:.1f} 秒（RTF {rtf:.2f}），{sentences} 句。"
             "已保存为 `{name}`。"),
}


def t(key: str, lang: str = "en") -> str:
    pair = TEXTS[key]
    return pair[1] if lang == "zh" else pair[0]


def bilingual(key: str) -> str:
    en, zh = TEXTS[key]
    return f"{zh} / {en}"
