"""The batch job runner: one background thread in the app that renders queued jobs item by
item through the same Synthesizer and admission gate as every other request (one job item
holds one slot at a time, so interactive requests keep the others).

It stops between items when asked (:meth:`JobRunner.stop`) or when the app starts draining
(a restart): the item in flight finishes within the drain deadline or, if the process dies
first, is redone after the restart; finished items never are (see :mod:`.jobs`).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from cosyvoice.errors import BusyError, CosyVoiceError, TextError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.longform.fit_job import ENGINE as FIT_ENGINE
from cosyvoice.longform.fit_job import create_fit_job, run_fit_job
from cosyvoice.longform.items import (
    Item,
    check_gap,
    check_items,
    cues_for,
    gap_samples,
    gaps_between,
)
from cosyvoice.longform.jobs import (
    CANCELLED,
    DONE,
    FAILED,
    FIT,
    ITEM_DONE,
    PENDING,
    JobStore,
    move_into,
)
from cosyvoice.longform.sources import parse_source
from cosyvoice.pipeline import Synthesizer
from cosyvoice.speaker.validation import PromptAudio
from cosyvoice.subtitles import to_srt, to_vtt

logger = logging.getLogger(__name__)

IDLE_POLL_S = 2.0
BLOCK_FRAMES = 1 << 16


class JobRunner:
    def __init__(self, synth: Synthesizer, gate: SynthesisGate, store: JobStore,
                 ready: threading.Event | None = None) -> None:
        self.synth, self.gate, self.store = synth, gate, store
        self.ready = ready
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        gate.tracker.on_drain(lambda _deadline: self.stop(wait=False))

    def start(self) -> None:
        if self._thread is None:
            self.store.load()
            self._thread = threading.Thread(target=self._loop, name="job-runner", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def submit(self, source: str, content: str, *, voice: str | None = None,
               instruction: str = "", engine: str | None = None, speed: float = 1.0,
               seed: int | None = None, gap_s: float = 0.5, group_gap_s: float = 1.5
               ) -> dict:
        """Parse an uploaded job file, check its size and every item (a 422 naming the row,
        line or chapter), store it queued and wake the runner. The single-request limit
        applies to each item (long chapters are cut to fit it); the job's own limits
        (``job_max_chars``, ``job_max_items``) to the whole."""
        settings = self.synth.settings
        if len(content) > settings.job_max_chars:
            raise TextError(f"{source!r} is {len(content)} characters; a job takes at most "
                            f"{settings.job_max_chars} / 任务文本上限 {settings.job_max_chars} 字")
        gap_s, group_gap_s = check_gap("gap_s", gap_s), check_gap("group_gap_s", group_gap_s)
        items = parse_source(source, content, voice or None, instruction.strip(),
                             settings.max_text_chars)
        if len(items) > settings.job_max_items:
            raise TextError(f"{source!r} makes {len(items)} items; a job takes at most "
                            f"{settings.job_max_items}")
        check_items(self.synth, items, engine or None, speed, seed)
        options = {"engine": engine or None, "speed": speed, "seed": seed, "gap_s": gap_s,
                   "group_gap_s": group_gap_s, "voice": voice or None,
                   "instruction": instruction}
        summary = self.store.create(source, items, options)
        logger.info("batch job %s queued: %s, %d items", summary["id"], source, len(items))
        self.wake()
        return summary

    def submit_fit(self, name: str, prompt: PromptAudio, budget_s: float | None = None,
                   lang: str = "en") -> dict:
        """Queue a voice fit (:mod:`.fit_job`) of a validated prompt, saved as ``name``
        when done; it waits its turn behind the jobs queued before it (one runner)."""
        summary = create_fit_job(self.store, self.synth.using(FIT_ENGINE), name, prompt,
                                 budget_s, lang)
        self.wake()
        return summary

    def stop(self, wait: bool = True, timeout: float = 30.0) -> None:
        """No new item starts; with ``wait``, wait for the one in flight."""
        self._stop.set()
        self._wake.set()
        if wait and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set() or self.gate.tracker.draining.is_set()

    def _loop(self) -> None:
        if self.ready is not None:
            while not self.ready.wait(IDLE_POLL_S):
                if self.stopping:
                    return
        while not self.stopping:
            job_id = self.store.next_runnable()
            if job_id is None:
                self._wake.wait(IDLE_POLL_S)
                self._wake.clear()
                continue
            try:
                self.run_job(job_id)
            except Exception as e:  # a bug: the job fails with the reason, the runner lives
                logger.exception("batch job %s failed", job_id)
                self.store.update(job_id, state=FAILED, error=f"internal error: {e}")

    def run_job(self, job_id: str) -> None:
        """Render the job's pending items, then join them; returns early (the job stays
        unfinished) when stopping, or when the job was cancelled. A fit job runs its fit."""
        if self.store.get(job_id)["kind"] == FIT:
            run_fit_job(self.store, job_id, self.synth, lambda: self.stopping,
                        busy=lambda: self.gate.depth > 0)
            return
        if not self.store.start_run(job_id):
            return
        job = self.store.get(job_id)
        opts = job["options"]
        folder = self.store.folder(job_id)
        logger.info("batch job %s: %d of %d items to render", job_id,
                    sum(it["state"] == PENDING for it in job["items"]), len(job["items"]))
        for index, item in enumerate(job["items"]):
            if item["state"] != PENDING:
                continue
            if self.stopping or self.store.state(job_id) == CANCELLED:
                return
            self._render(job_id, index, item, opts, folder)
        if self.stopping or self.store.state(job_id) == CANCELLED:
            return
        finish_job(self.store, job_id)

    def _render(self, job_id: str, index: int, item: dict, opts: dict, folder: Path) -> None:
        req = Item(item["text"], item["voice"], item["instruction"]).request(
            opts.get("engine"), opts.get("speed", 1.0), opts.get("seed"))
        while True:
            try:
                with self.gate.slot(len(req.text)):
                    self.store.item_started(job_id, index)
                    t0 = time.perf_counter()
                    result = self.synth.synthesize(req)
                break
            except BusyError as e:  # queue full: wait our turn; draining: stop here
                if self.stopping:
                    return
                self._stop.wait(min(e.retry_after_s, 5))
            except CosyVoiceError as e:
                logger.info("batch job %s %s: %s", job_id, item["where"], e)
                self.store.item_finished(job_id, index, error=str(e))
                return
        move_into(result.path, folder / "items" / item["filename"])
        self.store.item_finished(job_id, index, seconds=round(result.duration_s, 3),
                                 elapsed_s=round(time.perf_counter() - t0, 3),
                                 sample_rate=result.sample_rate,
                                 notes=" | ".join(result.notes))


def finish_job(store: JobStore, job_id: str) -> None:
    """Join the finished items (``gap_s`` between items, ``group_gap_s`` where the chapter
    or voice changes) into ``joined.wav`` block by block, write one subtitle cue per item,
    mark the job done (failed when no item could be rendered)."""
    job = store.get(job_id)
    folder = store.folder(job_id)
    done = [it for it in job["items"] if it["state"] == ITEM_DONE]
    if not done:
        store.update(job_id, state=FAILED, error="no item could be rendered; see the items' "
                     "errors")
        return
    opts = job["options"]
    items = [Item(it["text"], it["voice"], group=it["group"]) for it in done]
    sr = int(job["sample_rate"] or sf.info(folder / "items" / done[0]["filename"]).samplerate)
    gaps = gap_samples(gaps_between(items, opts.get("gap_s", 0.5),
                                    opts.get("group_gap_s", 1.5)), sr)
    lengths = _write_joined(folder, [it["filename"] for it in done], gaps, sr)
    cues = cues_for([it["text"] for it in done], lengths, gaps, sr)
    for name, text in (("subtitles.srt", to_srt(cues)), ("subtitles.vtt", to_vtt(cues))):
        tmp = folder / f".partial-{name}"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(folder / name)
    failed = len(job["items"]) - len(done)
    store.update(job_id, state=DONE, error=f"{failed} item(s) failed; see the items" if failed
                 else "")
    logger.info("batch job %s done: %d items, %.1f s audio", job_id, len(done),
                sum(lengths) / sr)


def _write_joined(folder: Path, names: list[str], gaps: list[int], sr: int) -> list[int]:
    """Stream the items into ``joined.wav`` (never the whole book in memory); returns each
    item's length in samples."""
    tmp, lengths = folder / ".partial-joined.wav", []
    with sf.SoundFile(tmp, "w", samplerate=sr, channels=1, subtype="PCM_16") as out:
        for i, name in enumerate(names):
            n = 0
            with sf.SoundFile(folder / "items" / name) as f:
                if f.samplerate != sr:
                    raise CosyVoiceError(f"{name} is {f.samplerate} Hz, not {sr} Hz")
                for block in f.blocks(BLOCK_FRAMES, dtype="int16"):
                    out.write(block)
                    n += len(block)
            lengths.append(n)
            if i < len(gaps):
                out.write(np.zeros(gaps[i], np.int16))
    tmp.replace(folder / "joined.wav")
    return lengths
