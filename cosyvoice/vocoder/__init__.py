"""cosyvoice.vocoder"""
