"""cosyvoice.server: the HTTP app (REST, OpenAI-compatible routes, the gradio UI).

gradio is imported here without its type-stub upkeep (:mod:`.gradio_setup`): every module of
this package may import gradio, and this runs before any of them.
"""

from cosyvoice.server.gradio_setup import skip_stub_upkeep

skip_stub_upkeep()
