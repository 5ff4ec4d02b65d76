"""Vocoders: log-mel frames → waveform.

``base.Vocoder`` is the interface; ``hifigan`` holds our HiFi-GAN V1/V2/V3 generator
(jik876 state-dict compatible) and ``cpu_generator`` its CPU fast path, built from the
convs of ``cpu_direct``, ``cpu_spectral`` and ``cpu_int8`` run in ``cpu_tiling``'s fixed
tiles; ``loader`` loads a checkpoint into a ``HifiGanVocoder``. Nothing is loaded at
import time.
"""
