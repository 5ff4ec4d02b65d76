"""The UI's Lexicon tab: the user lexicon as editable text, and a reading preview.

One line per word — the word, a space, its reading (``重要 zhong4 yao4``, ``tomato T AH0 M
EY1 T OW2``); Save checks every line and writes ``models/lexicon.json`` (the same file and
lock as ``/api/v1/lexicon``), or says which line is wrong and writes nothing. The preview
shows the pinyin the Mandarin G2P gives a text, and the phones of each word that has a
reading, so an edit's effect can be seen before synthesizing.
"""

from __future__ import annotations

import gradio as gr

from cosyvoice.errors import CosyVoiceError, TextError
from cosyvoice.frontend.lexicon import Lexicon
from cosyvoice.server.texts import t
from cosyvoice.server.ui_lang import Relabel


def lexicon_text(lexicon: Lexicon) -> str:
    return "\n".join(f"{e['word']} {e['reading']}" for e in lexicon.entries())


def parse_lines(text: str) -> list[dict[str, str]]:
    """Text-area lines → lexicon entries; TextError naming a line without a reading."""
    rows = []
    for n, line in enumerate((text or "").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            raise TextError(f"line {n} {line!r}: write the word, a space and its reading / "
                            f"第 {n} 行缺少读音")
        rows.append({"word": parts[0], "reading": parts[1]})
    return rows


def save_lexicon(lexicon: Lexicon, text: str) -> tuple[str, str]:
    """(the lexicon as saved, status); on a bad line the text stays as typed."""
    try:
        lexicon.replace({"entries": parse_lines(text)})
    except CosyVoiceError as e:
        return text, f"❌ not saved / 未保存: {e}"
    n = len(lexicon.entries())
    return lexicon_text(lexicon), f"✅ saved {n} words / 已保存 {n} 个词条"


def preview(synth, text: str) -> str:
    """The readings the text pass gives ``text`` now: Mandarin pinyin per run, and the
    phones of each word that has a reading."""
    from cosyvoice.frontend.plan import plan_text
    from cosyvoice.frontend.zh_g2p import zh_to_phones

    if not (text or "").strip():
        return ""
    try:
        sentences = plan_text(text, synth.settings.max_text_chars,
                              lexicon=synth.lexicon.readings())
        lines = []
        for s in sentences:
            for run in s.runs:
                if run.lang == "zh":
                    zh = zh_to_phones(run.text, normalize=False, readings=run.readings)
                    lines.append(f"{run.text}: " + " ".join(x.pinyin for x in zh.syllables))
                for r in run.readings.values():
                    lines.append(f"{r.word} → {r.text} ({r.source})")
    except CosyVoiceError as e:
        return f"❌ {e}"
    return "\n\n".join(f"`{line}`" for line in lines)


def build_lexicon_tab(synth, relabel: Relabel | None = None) -> None:
    """The Lexicon tab (inside the app's ``gr.Blocks``)."""
    L = relabel or Relabel()
    lexicon: Lexicon = synth.lexicon
    with L(gr.Tab(t("tab_lexicon"), id="lexicon", elem_id="lexicon-tab"), label="tab_lexicon"):
        L(gr.Markdown(t("lexicon_help")), value="lexicon_help")
        box = L(gr.Textbox(lexicon_text(lexicon), lines=10, max_lines=30,
                           label=t("lexicon_box"), elem_id="lexicon-text"), label="lexicon_box")
        with gr.Row():
            save = L(gr.Button(t("lexicon_save"), variant="primary", elem_id="lexicon-save"),
                     value="lexicon_save")
            reload = L(gr.Button(t("lexicon_reload"), elem_id="lexicon-reload"),
                       value="lexicon_reload")
        status = gr.Markdown("", elem_id="lexicon-status")
        sample = L(gr.Textbox("朝阳公园很大。A tomato.", label=t("lexicon_sample"),
                              elem_id="lexicon-sample"), label="lexicon_sample")
        check = L(gr.Button(t("lexicon_check"), elem_id="lexicon-check"),
                  value="lexicon_check")
        shown = gr.Markdown("", elem_id="lexicon-preview")
    save.click(lambda text: save_lexicon(lexicon, text), box, [box, status],
               api_name="lexicon_save", queue=False)
    reload.click(lambda: (lexicon_text(lexicon), ""), None, [box, status],
                 api_name=False, queue=False)
    check.click(lambda text: preview(synth, text), sample, shown,
                api_name="lexicon_preview", queue=False)
