"""Entry point inside the oracle's interpreter: load a script, call ``main(**args)``, save its dict.

    python _entry.py SCRIPT.py ARGS.pt OUT.pt

(The harness runs jobs through ``_server.py``, which calls :func:`run` in a forked child.)
"""

import importlib.util
import sys

import torch


def run(script: str, args_path: str, out_path: str) -> None:
    spec = importlib.util.spec_from_file_location("oracle_script", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(**torch.load(args_path, weights_only=True))
    torch.save(result, out_path)


def main() -> None:
    run(*sys.argv[1:4])


if __name__ == "__main__":
    main()
