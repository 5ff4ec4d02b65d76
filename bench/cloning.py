"""The two English sentences bench/cloning_v2.py (and the voice fitter's bench) speak per case.

The cloning study that lived here (Piper joe moved by the adapter toward 8 prompts: GE2E
gain, DNSMOS, pocketsphinx WER) was retired into ``python -m bench eval`` on 2026-12-07; its
figures are in bench/README.md. These sentences stay until bench/cloning_v2.py folds into
the harness: k = 3 of the clone blend was chosen on them, so the harness scores cloning on
other sentences (bench/eval/testset_v1.json).
"""

SENTENCES = (
    "The old lighthouse keeper climbed the narrow stairs every evening to watch the "
    "fishing boats return safely to the harbor.",
    "She bought fresh bread, a jar of honey and two green apples before walking home "
    "slowly through the quiet park.",
)
