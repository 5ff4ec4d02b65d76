"""cosyvoice.acoustic"""
