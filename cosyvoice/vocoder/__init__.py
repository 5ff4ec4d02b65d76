"""Vocoders: log-mel frames → waveform.

``base.Vocoder`` is the interface; ``hifigan`` holds our HiFi-GAN V1/V2/V3 generator
(jik876 state-dict compatible) and ``fast_cpu`` its CPU fast path; ``loader`` loads a
checkpoint into a ``HifiGanVocoder``. Nothing is loaded at import time.
"""
