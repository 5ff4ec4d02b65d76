"""cosyvoice.lifecycle"""
