"""Inside the oracle's interpreter: load a script, call its ``main(**args)``, save its dict.
``_server.py`` calls :func:`run` in a forked child for each job of the harness.
"""

import importlib.util

import torch


def run(script: str, args_path: str, out_path: str) -> None:
    spec = importlib.util.spec_from_file_location("oracle_script", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(**torch.load(args_path, weights_only=True))
    torch.save(result, out_path)
