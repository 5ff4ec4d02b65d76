"""The evaluation harness, ``python -m bench eval`` (bench/README.md, "The evaluation harness").

``testset`` the fixed, versioned texts and the cloning cases; ``rows`` what is scored (engine,
voice, mode); ``render`` speaks a row's texts in a fresh process; ``metrics`` and ``score``
rate each output and summarize a row; ``report`` writes JSON and markdown; ``cli`` runs it.
"""
