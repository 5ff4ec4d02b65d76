"""Voices beyond the stock ones: saved voices (:mod:`~cosyvoice.voice.store`), blends of
Kokoro packs (:mod:`~cosyvoice.voice.blend`), the measured voice space that cloning picks from
(:mod:`~cosyvoice.voice.space`), fitted packs (:mod:`~cosyvoice.voice.fit`), and the offline
engine's analysis-and-transformation adapter (:mod:`~cosyvoice.voice.adapter`: pitch,
vocal-tract length and spectral colour, not a speaker's articulation or prosody).

Nothing is imported here: a light module of this room (a blend's parser, the store) must not
pull in torch with the adapter (``python -m cosyvoice --help`` did, 1.5 s of its 1.8 s).
"""
