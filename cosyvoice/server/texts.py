"""UI strings in English and Chinese. Keys are stable; the UI switches between columns."""

from __future__ import annotations

from collections.abc import Iterable

from cosyvoice.engine.base import Capabilities

LANGS = ("en", "zh")

TEXTS: dict[str, tuple[str, str]] = {
    "title": (
        "# CosyVoice WebUI\nOffline voice-cloning text-to-speech studio",
        "# CosyVoice WebUI\n离线语音克隆文本转语音工作室",
    ),
    # ---- the introduction, built from each engine's capabilities (intro()) ----
    "intro_engine": ("**{label}** speaks {languages}. Voices: {voices}. Cloning: {cloning}.",
                     "**{label}** 可朗读{languages}。音色：{voices}。复刻：{cloning}。"),
    "intro_engine_no_clone": ("**{label}** speaks {languages}. Voices: {voices}.",
                              "**{label}** 可朗读{languages}。音色：{voices}。"),
    "intro_presets": ("{n} preset voices", "{n} 个预设音色"),
    "intro_blends": ("blends of them (af_bella:2+af_sky:1)",
                     "预设音色的混合（af_bella:2+af_sky:1）"),
    "intro_saved": ("the voices you save", "你保存的音色"),
    "intro_pick_language": ("Choose a voice of the text's language.",
                            "请选择与文本语言相同的音色。"),
    "intro_and": (" and ", "和"),
    "cloning_blend": ("a blend of the preset voices nearest to your prompt — it approximates "
                      "a voice, it does not reproduce it", "由与参考录音最接近的预设音色混合而成"
                      "——是近似，而非完全复制"),
    "cloning_adapter": ("a preset voice moved toward your prompt's pitch, timbre and formants "
                        "— it approximates a voice, it does not reproduce it",
                        "把预设音色的音高、音色和共振峰向参考录音靠拢——是近似，而非完全复制"),
    "cloning_model": ("the model speaks in your prompt's voice (zero-shot)",
                      "模型直接以参考录音的音色朗读（零样本复刻）"),
    "lang_en": ("English", "英语"),
    "lang_zh": ("Mandarin Chinese", "普通话"),
    "lang_ko": ("Korean", "韩语"),
    "lang_yue": ("Cantonese", "粤语"),
    "lang_de": ("German", "德语"),
    "lang_ru": ("Russian", "俄语"),
    "ui_lang": ("Interface language", "界面语言"),
    "mode": ("Mode", "推理模式"),
    "engine": ("Engine", "合成引擎"),
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
    "mode_xlingual": ("Cross-lingual cloning", "跨语种复刻"),
    "mode_instruct": ("Instruction control", "自然语言控制"),
    "step_xlingual": (
        "Step 1: upload or record 3–30 s of clear speech in one language. Step 2: type the "
        "text in the other language (a Chinese prompt speaking English, or the reverse). "
        "Step 3: press Generate.",
        "第一步：上传或录制3–30秒一种语言的清晰语音。第二步：输入另一种语言的合成文本"
        "（中文参考音频说英文，或反之）。第三步：点击生成音频。",
    ),
    "step_instruct": (
        "Step 1: choose a voice, or upload a prompt (optional; it replaces the voice). "
        "Step 2: type the instruction and the text. Step 3: press Generate.",
        "第一步：选择预训练音色，或上传参考音频（可选，优先于音色）。第二步：输入指令文本和合成文本。"
        "第三步：点击生成音频。",
    ),
    "instruction": ("Instruction", "指令文本"),
    "instruction_ph": (
        "e.g. speak happily and a bit faster · angry, loud voice · 用四川话说这句话 · "
        "悲伤地朗读 · 小声一点",
        "例如：用四川话说这句话 · 悲伤地朗读 · 语速 1.5 倍 · speak happily and a bit faster",
    ),
    "dialects": ("Chinese dialects", "方言列表"),
    "dialects_head": ("| dialect | | note |\n|---|---|---|",
                      "| 方言 | | 说明 |\n|---|---|---|"),
    "dialect_yes": ("✅ supported", "✅ 支持"),
    "dialect_no": ("❌ not available", "❌ 不支持"),
    "dialects_missing": ("The dialect list is not available in this build.",
                         "此版本没有方言列表。"),
    "save_name": ("Save this voice as", "保存音色名称"),
    "save_name_ph": ("a name, e.g. my-voice (letters, digits, space . - _)",
                     "名称，例如：我的声音（字母、数字、空格 . - _）"),
    "save_btn": ("💾 Save voice", "💾 保存音色"),
    "saved_voice": ("Saved voice **{name}**: it is now in the preset voice list.",
                    "已保存音色 **{name}**，可在预训练音色列表中选择。"),
    "save_needs_prompt": ("Upload or record a prompt first (or type a blend such as "
                          "af_bella:2+af_sky:1 as the voice), then save it under a name.",
                          "请先上传或录制参考音频（或在音色框输入混合音色，如 "
                          "af_bella:2+af_sky:1），再填写名称保存。"),
    "voice_blend_info": ("Pick a voice, or type a blend of Kokoro voices: af_bella:2+af_sky:1",
                         "选择音色，或输入 Kokoro 混合音色：af_bella:2+af_sky:1"),
    "saved_label": ("saved voice", "已保存音色"),
    "fitted_label": ("fitted voice", "拟合音色"),
    "stream": ("Stream (play while synthesizing)", "流式推理（边合成边播放）"),
    "stream_no_ffmpeg": (
        "Streaming output needs ffmpeg and ffprobe on the server (Debian/Ubuntu: "
        "apt-get install ffmpeg); use Generate without streaming meanwhile.",
        "流式输出需要服务器安装 ffmpeg 和 ffprobe（Debian/Ubuntu：apt-get install ffmpeg），"
        "请暂时使用非流式生成。",
    ),
    "stream_output": ("Result (streaming)", "合成音频（流式）"),
    "streaming": ("Streaming: sentence {i}/{n} ready…", "流式合成：第 {i}/{n} 句已就绪……"),
    "picture": ("Waveform and mel spectrogram", "波形与梅尔频谱"),
    "history": ("This session's results", "本次会话的合成记录"),
    "history_pick": ("Play or download again", "重新播放或下载"),
    "history_audio": ("From the history", "历史音频"),
    "col_n": ("#", "序号"),
    "col_time": ("Time", "时间"),
    "col_mode": ("Mode", "模式"),
    "col_text": ("Text", "文本"),
    "col_seconds": ("Seconds", "时长（秒）"),
    "col_file": ("File", "文件"),
    "notes": ("Notes", "说明"),
    "text": ("Text to synthesize", "输入合成文本"),
    "text_ph": ("Type Chinese or English text here, e.g. 今天天气很好。 or Hello!",
                "在此输入中文或英文文本，例如：今天天气很好。"),
    "voice": ("Preset voice", "选择预训练音色"),
    "prompt": ("Prompt recording (3–30 s)", "参考音频（3–30秒）"),
    "prompt_text": ("Prompt transcript (optional)", "参考音频文本（可选）"),
    "prompt_text_required": ("Prompt transcript (required: type what the recording says)",
                             "参考音频文本（必填：输入录音所说的内容）"),
    "prompt_text_ph": (
        "What the prompt says. Optional; kept with saved voices.",
        "参考音频中说的话。可选。",
    ),
    "speed": ("Speed", "语速"),
    "seed": ("Seed (empty = random)", "随机种子（留空为随机）"),
    "seed_ph": ("random", "随机"),
    "dice": ("🎲 New seed", "🎲 随机种子"),
    "strength": ("Similarity strength (0 = unchanged voice, 1 = full)",
                 "相似度强度（0不变，1最强）"),
    "generate": ("Generate", "生成音频"),
    "output": ("Result", "合成音频"),
    "status": ("Status", "状态"),
    "ready": ("Ready.", "就绪。"),
    "working": ("Generating…", "正在生成……"),
    "failed": ("**Failed:** {message}", "**失败：**{message}"),
    "failed_unknown": ("an internal error; see the app log", "内部错误，请查看应用日志"),
    "done": ("Done: {audio:.1f} s of audio in {elapsed:.1f} s (RTF {rtf:.2f}), "
             "{sentences} sentence(s). Saved as `{name}`.",
             "完成：{audio:.1f} 秒音频，用时 {elapsed:.1f} 秒（RTF {rtf:.2f}），{sentences} 句。"
             "已保存为 `{name}`。"),
    # ---- Dialogue tab (cosyvoice/server/ui_dialogue.py) ----
    "tab_dialogue": ("Dialogue", "对话"),
    "dialogue_help": (
        "One line per dialogue line: `[voice] text` or `[voice|instruction] text`; a line "
        "without a tag continues the previous speaker; `#` starts a comment; inline "
        "`[pause:500ms]` and `[breath]` work inside a line. Voices: the engine's bundled and "
        "saved voices.",
        "每行一句：`[音色] 文本` 或 `[音色|指令] 文本`；无标签的行沿用上一位说话人；"
        "`#` 开头为注释；行内可用 `[pause:500ms]`、`[breath]`。音色：引擎自带的和已保存的音色。",
    ),
    "dialogue_script": ("Dialogue script", "对话脚本"),
    "dialogue_gap": ("Gap between lines (s)", "行间停顿（秒）"),
    "dialogue_speaker_gap": ("Gap on a speaker change (s)", "换人停顿（秒）"),
    "dialogue_render": ("Render dialogue", "生成对话"),
    "dialogue_audio": ("Dialogue", "对话音频"),
    "dialogue_table": ("Lines", "各行"),
    "subtitle_files_both": ("Subtitles (SRT, WebVTT)", "字幕（SRT、WebVTT）"),
    "col_line": ("Line", "行"),
    "col_voice": ("Voice", "音色"),
    "col_instruction": ("Instruction", "指令"),
    # ---- Batch tab (cosyvoice/server/ui_jobs.py) ----
    "tab_batch": ("Batch", "批量"),
    "batch_help": (
        "Upload a `.txt`/`.md` (chapters start at headings; long chapters are cut at sentence "
        "ends) or a `.csv`/`.jsonl` with columns `text`, `voice`, `instruction`, `filename`. "
        "The job runs in the background and resumes after a restart.",
        "上传 .txt/.md（按标题分章，长章节在句末切分）或 .csv/.jsonl（列：text、voice、"
        "instruction、filename）；任务在后台运行，重启后继续。",
    ),
    "job_file": ("Job file", "任务文件"),
    "job_voice": ("Voice of items that name none", "默认音色"),
    "job_instruction": ("Instruction (optional)", "指令（可选）"),
    "job_start": ("Start job", "开始任务"),
    "job_id": ("Job id (empty: the newest)", "任务编号（留空：最新任务）"),
    "job_result": ("Result (zip)", "结果（zip）"),
    "job_cancel": ("Cancel job", "取消任务"),
    "job_table": ("Jobs", "任务列表"),
    "col_id": ("Id", "编号"),
    "col_source": ("Source", "来源"),
    "col_done": ("Done", "完成"),
    "col_total": ("Total", "总数"),
    "col_failed": ("Failed", "失败"),
    "col_progress": ("Progress", "进度"),
    # ---- Lexicon tab (cosyvoice/server/ui_lexicon.py) ----
    "tab_lexicon": ("Lexicon", "词典"),
    "lexicon_help": (
        "One word per line: the word, a space, its reading — Mandarin pinyin with tone "
        "numbers or marks (`朝阳 chao2 yang2`), English ARPAbet (`tomato T AH0 M EY1 T OW2`). "
        "Used by every synthesis after Save; in the text itself write `{word|reading}`, e.g. "
        "`{重要|zhong4 yao4}`.",
        "每行一个词：词语、空格、读音（带声调的拼音，如 `朝阳 chao2 yang2`；英文用 ARPAbet）。"
        "保存后对所有合成生效；正文中可写 `{word|reading}`，如 `{重要|zhong4 yao4}`。",
    ),
    "lexicon_box": ("Lexicon", "词典"),
    "lexicon_save": ("Save", "保存"),
    "lexicon_reload": ("Reload", "重新读取"),
    "lexicon_sample": ("Check a text", "试读"),
    "lexicon_check": ("Show readings", "显示读音"),
    # ---- subtitles under the result (cosyvoice/server/ui_subtitles.py) ----
    "subtitles": ("Subtitles", "字幕"),
    "subtitle_files": ("SRT · WebVTT files", "字幕文件（SRT · WebVTT）"),
    "col_start": ("Start", "开始"),
    "col_end": ("End", "结束"),
    # ---- Models panel (cosyvoice/server/ui_models.py) ----
    "tab_synthesis": ("Synthesis", "语音合成"),
    "tab_models": ("Models", "模型管理"),
    "models_intro": (
        "Models, memory and restarts. **Reload models** rebuilds every model in place "
        "(a few seconds, the app keeps serving). **Unload idle models** frees models unused "
        "for {idle:.0f} s; they load again on first use. **Restart application** stops "
        "this process and starts a fresh one.",
        "模型、内存与重启。**重新加载模型**：原地重建所有模型（几秒钟，服务不中断）。"
        "**卸载空闲模型**：释放 {idle:.0f} 秒内未使用的模型，下次使用时自动加载。"
        "**重启应用**：停止当前进程并启动新进程。",
    ),
    "models_table": ("Models", "模型"),
    "loads_on_first_use": ("{what} — unloaded: loads on first use (the app stays ready; "
                           "that request waits for the load)",
                           "{what} — 已卸载：首次使用时自动加载（应用保持就绪，该请求会等待加载）"),
    "col_model": ("Model", "模型"),
    "col_state": ("State", "状态"),
    "col_device": ("Device", "设备"),
    "col_memory": ("Memory (MB)", "内存 (MB)"),
    "col_load": ("Load (s)", "加载 (秒)"),
    "col_idle": ("Idle (s)", "空闲 (秒)"),
    "col_note": ("Note", "说明"),
    "system": ("**System** — CPU {cpu:.0f}% · app RSS {rss:.0f} MB · torch CUDA allocated "
               "{alloc:.0f} MB / reserved {reserved:.0f} MB · {gpus} · in flight {inflight} · "
               "up {uptime} · restarts {restarts}",
               "**系统** — CPU {cpu:.0f}% · 进程内存 {rss:.0f} MB · torch CUDA 已分配 "
               "{alloc:.0f} MB / 已保留 {reserved:.0f} MB · {gpus} · 进行中 {inflight} · "
               "运行 {uptime} · 重启次数 {restarts}"),
    "no_gpu": ("no GPU", "无 GPU"),
    "set_aside": ("**Damaged files set aside** (renamed, kept; the app goes on without them — "
                  "repair and rename back, or remove; /health/ready lists them): {items}",
                  "**已移开的损坏文件**（已改名保留，应用照常运行——修复后改回原名或删除；"
                  "/health/ready 中列出）：{items}"),
    "admin_token": ("Admin token (needed because the app listens beyond this machine)",
                    "管理员令牌（应用对外监听时需要）"),
    "reload_models": ("Reload models", "重新加载模型"),
    "folder_model": ("Model loaded from a folder", "从目录加载的模型"),
    "folder_path": ("Released CosyVoice folder on the server (e.g. "
                    "/models/Fun-CosyVoice3-0.5B-2512)",
                    "服务器上的 CosyVoice 官方模型目录（如 /models/Fun-CosyVoice3-0.5B-2512）"),
    "load_folder": ("Load folder", "加载目录"),
    "folder_loaded": ("**{name}** is READY from {path}.", "**{name}** 已从 {path} 加载完成。"),
    "unload_idle": ("Unload idle models", "卸载空闲模型"),
    "restart_app": ("Restart application", "重启应用"),
    "restart_what": (
        "**Restart the application?** This will:\n\n"
        "- stop this process (requests in progress get up to {drain:.0f} s to finish; "
        "new ones are refused meanwhile)\n"
        "- free all model and GPU memory\n"
        "- delete the cache folder `{cache}` (uploads, temporary files: {cache_files} "
        "file(s), {cache_mb:.1f} MB)\n"
        "- delete the generated audio in `{outputs}` ({out_files} file(s), {out_mb:.1f} MB) "
        "**unless you tick \"keep generated audio\"**\n"
        "- start a fresh process; this page reloads itself when it is ready (about 15 s)",
        "**确定重启应用？** 将会：\n\n"
        "- 停止当前进程（进行中的请求最多有 {drain:.0f} 秒完成，期间拒绝新请求）\n"
        "- 释放全部模型和 GPU 显存\n"
        "- 删除缓存目录 `{cache}`（上传和临时文件：{cache_files} 个，{cache_mb:.1f} MB）\n"
        "- 删除 `{outputs}` 中已生成的音频（{out_files} 个，{out_mb:.1f} MB），"
        "**除非勾选\"保留已生成音频\"**\n"
        "- 启动新进程；就绪后本页面自动刷新（约 15 秒）",
    ),
    "keep_outputs": ("Keep generated audio", "保留已生成音频"),
    "restart_confirm": ("Yes, restart now", "确认重启"),
    "cancel": ("Cancel", "取消"),
    "restarting": ("Restarting… (old process {pid}); this page reloads when the new one is "
                   "ready.", "正在重启……（旧进程 {pid}），新进程就绪后页面将自动刷新。"),
    "restart_wait": ("Restarting…", "正在重启……"),
    "restart_failed": ("The app did not come back. See logs/restart.log on the server.",
                       "应用未能恢复，请查看服务器上的 logs/restart.log。"),
    "reloaded": ("Reloaded {ok} model(s) in {seconds:.1f} s.", "已重新加载 {ok} 个模型，用时 "
                 "{seconds:.1f} 秒。"),
    "reload_failed": ("Reload of {names} failed; the previous instances keep serving: {why}",
                      "{names} 重新加载失败，旧实例继续服务：{why}"),
    "unloaded": ("Unloaded {names}; freed {mb:.1f} MB RSS, {gpu_mb:.1f} MB CUDA.",
                 "已卸载 {names}；释放内存 {mb:.1f} MB，CUDA {gpu_mb:.1f} MB。"),
    "nothing_idle": ("No model has been idle for {idle:.0f} s; nothing unloaded.",
                     "没有空闲超过 {idle:.0f} 秒的模型，未卸载任何模型。"),
}


def t(key: str, lang: str = "en") -> str:
    pair = TEXTS[key]
    return pair[1] if lang == "zh" else pair[0]


def bilingual(key: str) -> str:
    en, zh = TEXTS[key]
    return f"{zh} / {en}"


def language_name(code: str, lang: str = "en") -> str:
    """A language code's name in the UI's language (the frontend's table, then ours)."""
    from cosyvoice.frontend.languages import LANGUAGES

    if code in LANGUAGES:
        return LANGUAGES[code].name_zh if lang == "zh" else LANGUAGES[code].name
    return t(f"lang_{code}", lang) if f"lang_{code}" in TEXTS else code


def intro(engines: Iterable[Capabilities], lang: str = "en") -> str:
    """The page's introduction: a paragraph per engine built from its capabilities (its
    label, languages, voices and how it clones), so that it follows the engines."""
    return "\n\n".join(_engine_intro(caps, lang) for caps in engines)


def _engine_intro(caps: Capabilities, lang: str) -> str:
    sep = "、" if lang == "zh" else ", "
    voices = [t("intro_presets", lang).format(n=len(caps.voices))] if caps.voices else []
    voices += [t("intro_blends", lang)] if caps.blend_voices else []
    voices += [t("intro_saved", lang)] if caps.saved_voices else []
    names = [language_name(code, lang) for code in caps.languages]
    languages = (sep.join(names[:-1]) + t("intro_and", lang) + names[-1] if len(names) > 1
                 else "".join(names))
    text = t("intro_engine" if caps.cloning else "intro_engine_no_clone", lang).format(
        label=caps.label, languages=languages, voices=sep.join(voices),
        cloning=t(f"cloning_{caps.cloning}", lang) if caps.cloning else "")
    if caps.voice_languages:
        text += ("" if lang == "zh" else " ") + t("intro_pick_language", lang)
    return text
