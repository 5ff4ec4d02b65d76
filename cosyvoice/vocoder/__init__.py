"""Vocoders: log-mel frames → waveform.

``base.Vocoder`` is the interface; ``hifigan`` holds our HiFi-GAN V1/V2/V3 generator
(jik876 state-dict compatible) and ``cpu_generator`` its CPU fast path, built from
``cpu_spectral`` and the shared conv kernels of :mod:`cosyvoice.kernels` (fixed tiles,
oneDNN fp32 and int8 convs); ``loader`` loads a checkpoint into a ``HifiGanVocoder``.
Nothing is loaded at import time.
"""
