"""Entry point inside the oracle's interpreter: load a script, call ``main(**args)``, save its dict.

    python _entry.py SCRIPT.py ARGS.pt OUT.pt
"""

import importlib.util
import sys

import torch


def main() -> None:
    script, args_path, out_path = sys.argv[1:4]
    spec = importlib.util.spec_from_file_location("oracle_script", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(**torch.load(args_path, weights_only=True))
    torch.save(result, out_path)


if __name__ == "__main__":
    main()
