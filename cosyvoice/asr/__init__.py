"""Prompt transcription: speech → the transcript a cloning engine needs (issue #27, part 5).

``recognizers.py`` says which Whisper models are installed and what languages each knows;
``transcriber.py`` is the managed model (``asr`` in the ModelManager) and the language rule;
``service.py`` validates a prompt file and transcribes it, for the UI, the API and the CLI.
"""
