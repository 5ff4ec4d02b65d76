"""``python -m bench <command>``: the benchmark commands that are more than one script.

    python -m bench eval [--quick] [--rows ...]    # the evaluation harness (bench/eval/)
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {"eval": "bench.eval.cli"}  # command → module with main(argv) -> int


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        print(f"commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
