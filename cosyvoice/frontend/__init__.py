"""cosyvoice.frontend"""
