"""Long-form work built on the one Synthesizer: dialogue scripts (many voices, one file) and
batch jobs (a chapter or a list of lines, rendered in the background, resumable).

Each line or item is one :class:`~cosyvoice.pipeline.SynthesisRequest` through
:meth:`Synthesizer.synthesize`; this package only parses, checks, orders, persists and joins.
"""
