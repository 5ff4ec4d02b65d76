"""Prosody control: natural-language instructions (emotion, speed, volume, pitch,
dialect) parsed into a :class:`~cosyvoice.prosody.style.Style`, and Chinese dialect tone
rendering for the Mandarin backend."""
