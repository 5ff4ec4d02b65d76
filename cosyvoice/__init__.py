"""CosyVoice WebUI: an offline voice-cloning TTS studio.

Nothing is loaded at import time; models are reached through
:class:`cosyvoice.lifecycle.manager.ModelManager`.
"""

__version__ = "0.1.0"
