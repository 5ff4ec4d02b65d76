"""Command line: speak text, manage saved voices, render dialogues and drive batch jobs.

    python -m cosyvoice synthesize --text "Hello there." -o hello.wav
    echo "Read from stdin." | python -m cosyvoice synthesize -o out.flac
    python -m cosyvoice synthesize --file story.txt --prompt me.wav -o story.wav
    python -m cosyvoice voices list | add NAME PROMPT [--text T] | rm NAME | rename OLD NEW
    python -m cosyvoice transcribe me.wav [--language auto|en|zh] [--json]
    python -m cosyvoice dialogue script.txt -o talk.wav [--srt talk.srt] [--gap 0.25]
    python -m cosyvoice job submit book.md [--voice af_heart] [--wait] [--server URL]

One module per command (:mod:`.speak`, :mod:`.voices`, :mod:`.transcribe`, :mod:`.dialogue`,
:mod:`.jobs`), what they share in :mod:`.common`, the parser and entry point in
:mod:`.entry`. Models are built exactly as the app builds them
(:func:`cosyvoice.bootstrap.build`) and load on first use. Settings come from the
``COSYVOICE_*`` environment variables (see ``python app.py --help``); the flags override
them. Exit codes: 0 done, 2 a usage or input error (the message says what to fix), 1
anything else (a model that failed to load, an unexpected error).
"""

from cosyvoice.cli.entry import main

__all__ = ["main"]
