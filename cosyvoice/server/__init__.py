"""cosyvoice.server"""
