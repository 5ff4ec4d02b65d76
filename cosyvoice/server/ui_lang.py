"""The interface language: each text of the page that switches between English and
Chinese is registered where its component is built (:class:`Relabel`), and one change
event of the language radio relabels them all, so no tab keeps English in the Chinese UI.

A text is a key of :data:`~cosyvoice.server.texts.TEXTS`, or a function of the language
for texts built from data (the introduction, a table's headers). Texts that depend on more
than the language (the mode's step line, the transcript box's label) stay with their own
events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from cosyvoice.server.texts import t

Text = str | Callable[[str], Any]  # a TEXTS key, or lang → value


def text_of(text: Text, lang: str) -> Any:
    return text(lang) if callable(text) else t(text, lang)


class Relabel:
    """The page's language-dependent texts: ``relabel(component, label="key", ...)``
    registers (and returns) a component; :meth:`wire` adds the one change event."""

    def __init__(self) -> None:
        self.items: list[tuple[gr.components.Component, dict[str, Text]]] = []

    def __call__(self, component, **props: Text):
        self.items.append((component, props))
        return component

    def updates(self, lang: str) -> list[dict]:
        """One update per registered component: its texts in ``lang``."""
        return [gr.update(**{prop: text_of(text, lang) for prop, text in props.items()})
                for _, props in self.items]

    def wire(self, lang: gr.components.Component) -> None:
        lang.change(self.updates, lang, [c for c, _ in self.items], api_name=False,
                    queue=False, show_progress="hidden")


def headers(*keys: str) -> Callable[[str], list[str]]:
    """A table's column headers (TEXTS keys) as a text of the language."""
    return lambda lang: [t(k, lang) for k in keys]
