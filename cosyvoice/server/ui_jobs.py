"""The Batch tab: upload a chapter (.txt/.md) or a list of lines (.csv/.jsonl), queue it as
a background job, and watch its progress bar (polled every second); the result zip (item
files, joined.wav, subtitles) appears when the job is done. Jobs survive a restart."""

from __future__ import annotations

import html
from pathlib import Path

import gradio as gr

from cosyvoice.engine.base import INSTRUCTION_MAX_CHARS
from cosyvoice.errors import CosyVoiceError
from cosyvoice.longform.jobs import FIT, result_zip
from cosyvoice.longform.runner import JobRunner
from cosyvoice.server.texts import t
from cosyvoice.server.ui_fit import fit_progress_text
from cosyvoice.server.ui_lang import Relabel, headers

POLL_S = 1.0
JOB_COLUMNS = ["id", "source", "state", "done", "total", "failed", "progress"]
HEADERS = headers("col_id", "col_source", "col_state", "col_done", "col_total", "col_failed",
                  "col_progress")


def progress_html(summary: dict | None) -> str:
    if summary is None:
        return "<div id='job-progress-text'>no job yet / 暂无任务</div>"
    pct = 100.0 * summary["progress"]
    what = (fit_progress_text(summary) if summary.get("kind") == FIT else
            f"{summary['done']}/{summary['total']} items ({pct:.0f} %)"
            + (f", {summary['failed']} failed" if summary["failed"] else ""))
    text = (f"{summary['id']}: {summary['state']} — {what}"
            + (f" · resumed {summary['resumed']}×" if summary["resumed"] else ""))
    text = html.escape(text)
    return (f"<progress id='job-progress-bar' max='100' value='{pct:.1f}' "
            f"style='width:100%'></progress><div id='job-progress-text' "
            f"data-state='{summary['state']}'>{text}</div>")


class JobsTab:
    def __init__(self, runner: JobRunner) -> None:
        self.runner = runner
        self.store = runner.store

    def submit(self, upload: str | None, voice: str | None, instruction: str):
        if not upload:
            raise gr.Error("choose a .txt, .md, .csv or .jsonl file / 请选择任务文件",
                           print_exception=False)
        path = Path(upload)
        try:
            content = path.read_text(encoding="utf-8")
            summary = self.runner.submit(path.name, content, voice=voice or None,
                                         instruction=instruction or "")
        except UnicodeDecodeError:
            raise gr.Error(f"{path.name} is not UTF-8 text", print_exception=False) from None
        except CosyVoiceError as e:
            raise gr.Error(str(e), print_exception=False) from None
        return summary["id"], *self.poll(summary["id"], None)

    def poll(self, job_id: str | None, shown: str | None):
        """(progress bar, jobs table, result file, what the page shows) for ``job_id``
        (empty: the newest job). The result file is sent once, not on every tick."""
        jobs = self.store.list()
        rows = [[j[c] for c in JOB_COLUMNS] for j in jobs]
        job_id = (job_id or "").strip() or (jobs[0]["id"] if jobs else "")
        bar, result = progress_html(None), None
        if job_id:
            try:
                summary = self.store.summary(job_id)
                bar = progress_html(summary)
                result = str(result_zip(self.store, job_id)) if summary["result"] else None
            except CosyVoiceError as e:
                bar = f"<div id='job-progress-text'>{html.escape(str(e))}</div>"
        return bar, rows, gr.skip() if result == shown else result, result

    def cancel(self, job_id: str | None, shown: str | None):
        try:
            self.store.cancel((job_id or "").strip())
        except CosyVoiceError as e:
            raise gr.Error(str(e), print_exception=False) from None
        return self.poll(job_id, shown)


def build_jobs_tab(runner: JobRunner, voices: list[tuple[str, str]],
                   relabel: Relabel | None = None) -> None:
    L = relabel or Relabel()
    tab_state = JobsTab(runner)
    with L(gr.Tab(t("tab_batch"), id="jobs", elem_id="jobs-tab"), label="tab_batch"):
        L(gr.Markdown(t("batch_help")), value="batch_help")
        with gr.Row():
            with gr.Column(scale=2):
                upload = L(gr.File(label=t("job_file"), type="filepath",
                                   file_types=[".txt", ".md", ".csv", ".jsonl"],
                                   elem_id="job-file"), label="job_file")
                voice = L(gr.Dropdown(voices, value=None, allow_custom_value=True,
                                      label=t("job_voice"), elem_id="job-voice"),
                          label="job_voice")
                instruction = L(gr.Textbox(label=t("job_instruction"),
                                           max_length=INSTRUCTION_MAX_CHARS,
                                           elem_id="job-instruction"), label="job_instruction")
                submit = L(gr.Button(t("job_start"), variant="primary", elem_id="job-submit"),
                           value="job_start")
            with gr.Column(scale=3):
                job_id = L(gr.Textbox(label=t("job_id"), elem_id="job-id"), label="job_id")
                bar = gr.HTML(progress_html(None), elem_id="job-progress")
                result = L(gr.File(label=t("job_result"), interactive=False,
                                   elem_id="job-result"), label="job_result")
                cancel = L(gr.Button(t("job_cancel"), elem_id="job-cancel"), value="job_cancel")
                table = L(gr.Dataframe(headers=HEADERS("en"), interactive=False,
                                       label=t("job_table"), elem_id="jobs-table"),
                          label="job_table", headers=HEADERS)
        shown = gr.State(None)  # the result file the page shows
        outputs = [bar, table, result, shown]
        submit.click(tab_state.submit, [upload, voice, instruction], [job_id, *outputs],
                     api_name="job_submit")
        cancel.click(tab_state.cancel, [job_id, shown], outputs, api_name=False, queue=False)
        timer = gr.Timer(POLL_S)
        timer.tick(tab_state.poll, [job_id, shown], outputs, api_name=False, queue=False,
                   show_progress="hidden")
