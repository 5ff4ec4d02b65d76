"""cosyvoice.server.ui_files in-process: the path rule, the walk over an event's inputs, and
the result check (a handler that echoes a client's path into a file output). The running
app's events are tried in test_bad_gradio_files.py."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import gradio as gr
import pytest

from cosyvoice.server.ui_files import GuardedBlocks, file_paths, lies_in


def run(coro):
    """``asyncio.run(coro)`` on a thread of its own: a browser test earlier in this worker
    may have left an event loop running on the main thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture
def folders(tmp_path, monkeypatch):
    upload, out, outside = tmp_path / "upload", tmp_path / "out", tmp_path / "outside"
    for d in (upload, out, outside):
        d.mkdir()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(upload))
    (outside / "secret.txt").write_text("secret")
    (upload / "mine.txt").write_text("mine")
    (out / "result.wav").write_bytes(b"RIFF")
    return upload, out, outside


def test_lies_in_resolves_links_and_dots(folders):
    upload, _, outside = folders
    (upload / "link.txt").symlink_to(outside / "secret.txt")
    (upload / "loop").symlink_to(upload / "loop")
    assert lies_in(str(upload / "mine.txt"), [upload])
    for path in (str(upload / "not-there.wav"), str(outside / "secret.txt"),
                 str(upload / "link.txt"), f"{upload}/../outside/secret.txt", str(upload),
                 f"{upload}/.",
                 f"{upload}/mine.txt\x00", "http://127.0.0.1/x.wav", "", None, 7,
                 str(upload / "loop" / "x")):
        assert not lies_in(path, [upload]), path


def test_file_paths_walks_any_depth_without_recursion():
    deep: object = {"path": "/deep", "meta": {}}
    for _ in range(100_000):
        deep = [deep]
    found = file_paths([{"value": {"path": "/a"}}, deep, {"path": None}, "x"])
    assert sorted(found) == ["/a", "/deep"]


def _echo_app(out) -> tuple[GuardedBlocks, object]:
    with GuardedBlocks(result_dirs=[out]) as demo:
        box, upload, files, button = gr.Textbox(), gr.File(), gr.File(), gr.Button()
        box.submit(lambda p: p, box, files)
        upload.upload(lambda f: f, upload, box)
        box.change(lambda p: (gr.update(value=p), gr.update(visible=True)), box,
                   [button, box])
    return demo, demo.fns


def test_an_input_outside_the_upload_folder_is_refused_before_preprocessing(folders):
    upload, out, outside = folders
    demo, fns = _echo_app(out)
    take = fns[1]
    before = set(upload.rglob("*"))
    with pytest.raises(gr.Error, match="was not uploaded to this app"):
        run(demo.preprocess_data(take, [{"path": str(outside / "secret.txt"),
                                         "meta": {"_type": "gradio.FileData"}}], None))
    assert set(upload.rglob("*")) == before  # nothing copied into the cache
    got = run(demo.preprocess_data(take, [{"path": str(upload / "mine.txt"),
                                           "meta": {"_type": "gradio.FileData"}}], None))
    assert got[0].endswith("mine.txt")


def test_a_result_outside_the_app_folders_is_not_sent(folders):
    upload, out, outside = folders
    demo, fns = _echo_app(out)
    echo = fns[0]
    for path in (str(outside / "secret.txt"), f"{out}/../outside/secret.txt",
                 {"__type__": "update", "value": str(outside / "secret.txt")},
                 [str(out / "result.wav"), str(outside / "secret.txt")]):
        with pytest.raises(gr.Error, match="outside the app's folders"):
            run(demo.postprocess_data(echo, path, None))
    sent = run(demo.postprocess_data(echo, str(out / "result.wav"), None))
    assert sent[0]["path"].startswith(str(upload))  # a copy in the cache, as usual


def test_outputs_that_are_not_files_pass(folders):
    """A Button (no API schema) or a Textbox given any text is not a file output."""
    demo, fns = _echo_app(folders[1])
    sent = run(demo.postprocess_data(fns[2], ("/etc/passwd", "/etc/passwd"), None))
    assert "/etc/passwd" in str(sent[0])
