"""CPU conv kernels shared by the HiFi-GAN vocoder and Kokoro's generator.

``tiling`` runs a conv in fixed-shape tiles on channels-last activations, ``direct`` holds
the oneDNN fp32 convs (and the fused pair), ``int8`` the oneDNN int8 convs, and ``cpu``
reads the CPU's feature flags to pick between them. No model lives here; nothing is loaded
at import time.
"""
