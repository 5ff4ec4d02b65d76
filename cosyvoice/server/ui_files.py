"""Which files a Gradio event may take and give back: :class:`GuardedBlocks`.

A client names a file by its path (``{"path": ..., "meta": {"_type": "gradio.FileData"}}``)
and Gradio copies it into its cache before the handler runs. Gradio refuses a path outside
its upload folder only in an app it launched itself: ``processing_utils._check_allowed``
returns at once unless ``Blocks.has_launched``, and ``gr.mount_gradio_app`` (how this app
serves the UI beside its REST routes) never sets it. Unchecked, any client could make the
server read its own files (``/etc/passwd``, another user's saved prompt) through any event
that takes a file.

:class:`GuardedBlocks` checks every event's inputs before Gradio preprocesses them, so a
refused file is never opened or copied: each ``path`` in an input (at any depth, in any
component) must lie inside Gradio's upload folder (this app's own temp folder for uploads:
``cache/gradio``) after symlinks and ``..`` are resolved; a URL is refused too (the server
fetches nothing on a client's behalf). Files an event returns must lie in the upload folder
or in one of the app's result folders. The UI is built with this class, so every present and
future event is covered by construction; a refusal is a ``gr.Error`` naming only the file's
last part.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder
from gradio_client.utils import is_http_url_like, value_is_file

logger = logging.getLogger(__name__)

REFUSED = ("{name} was not uploaded to this app, so it is refused: upload the file with the "
           "page or gradio_client (POST /gradio_api/upload) and send the path it returns. / "
           "该文件不是上传到本应用的文件，已拒绝：请通过页面或 gradio_client 上传。")
NOT_A_RESULT = "a result file of this event lies outside the app's folders; it was not sent"


def file_paths(value: Any) -> Iterator[Any]:
    """The ``path`` of every file-like dict inside ``value`` (dicts and lists, any depth;
    walked with a stack, so a deeply nested body cannot exhaust the recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("path") is not None:
                yield item["path"]
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def lies_in(path: Any, roots: Iterable[str | Path]) -> bool:
    """Whether ``path`` (a str) names an existing file or folder that, with symlinks and
    ``..`` resolved, lies strictly inside one of ``roots``. Anything else (a URL, a
    non-string, a NUL byte, a missing file, a dangling link or a link loop) does not."""
    if not isinstance(path, str) or not path or is_http_url_like(path):
        return False
    try:
        real = os.path.realpath(path, strict=True)
        for root in roots:
            top = os.path.realpath(root)
            if real != top and os.path.commonpath([real, top]) == top:
                return True
    except (OSError, ValueError, RuntimeError):
        return False
    return False


def _shown_name(path: Any) -> str:
    """The client's own file name, cut short, for a message (never a resolved path)."""
    return repr(Path(path).name[:80]) if isinstance(path, str) else "a file"


class GuardedBlocks(gr.Blocks):
    """``gr.Blocks`` whose events take only files uploaded to this app, and give back only
    files from ``result_dirs`` or the upload folder (see the module docstring)."""

    def __init__(self, *args, result_dirs: Iterable[str | Path] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.result_dirs = [Path(d) for d in result_dirs]
        self._gives_files: dict[int, bool] = {}

    def check_inputs(self, inputs: list[Any], event: str) -> None:
        """Refuse (gr.Error) the first input file outside the upload folder."""
        upload = get_upload_folder()
        for path in file_paths(inputs):
            if not lies_in(path, [upload]):
                logger.warning("event %s: refused a file outside the upload folder: %.200r",
                               event, path)
                raise gr.Error(REFUSED.format(name=_shown_name(path)), print_exception=False)

    def check_results(self, pairs: Iterable[tuple[Any, Any]], event: str) -> None:
        """Refuse the event's answer if a file output names a path outside the app's
        folders (a handler that echoed a client's value). ``pairs``: (output block, value
        the handler returned for it)."""
        allowed = [get_upload_folder(), *self.result_dirs]
        for block, value in pairs:
            if not self._is_file_output(block):
                continue
            for path in _result_paths(value):
                if not lies_in(path, allowed):
                    logger.warning("event %s: refused to send %.200r", event, path)
                    raise gr.Error(NOT_A_RESULT, print_exception=False)

    def _is_file_output(self, block: Any) -> bool:
        """Whether ``block``'s value is a file (its API schema, as gradio_client reads it);
        layouts and components without a schema (a Button) are not."""
        key = id(block)
        if key not in self._gives_files:
            try:
                schema = block.api_info() if hasattr(block, "api_info") else {}
            except NotImplementedError:
                schema = {}
            self._gives_files[key] = bool(schema) and value_is_file(schema)
        return self._gives_files[key]

    async def preprocess_data(self, block_fn, inputs, state, explicit_call=False):
        self.check_inputs(inputs, block_fn.name)
        return await super().preprocess_data(block_fn, inputs, state, explicit_call)

    async def postprocess_data(self, block_fn, predictions, state):
        outputs = list(block_fn.outputs)
        if isinstance(predictions, dict) and predictions and all(
                isinstance(k, gr.blocks.Block) for k in predictions):
            pairs = predictions.items()  # a {component: value} answer
        elif len(outputs) == 1 and not block_fn.batch:
            pairs = [(outputs[0], predictions)]
        elif isinstance(predictions, (list, tuple)):
            pairs = zip(outputs, predictions, strict=False)
        else:  # a shape Gradio itself refuses (validate_outputs)
            pairs = []
        self.check_results(pairs, block_fn.name)
        return await super().postprocess_data(block_fn, predictions, state)


def _result_paths(value: Any) -> Iterator[Any]:
    """The local paths in one file output's value: a str or Path, a list of them, a
    FileData dict, or an update's ``value``; bytes, arrays and URLs are not paths."""
    if isinstance(value, Path):
        yield str(value)
    elif isinstance(value, str):
        if not is_http_url_like(value):
            yield value
    elif isinstance(value, dict):
        if "value" in value and value.get("__type__") == "update":
            yield from _result_paths(value["value"])
        elif value.get("path") is not None:
            yield from _result_paths(value["path"])
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _result_paths(item)
