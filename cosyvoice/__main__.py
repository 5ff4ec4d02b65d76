"""``python -m cosyvoice``: the command line (see :mod:`cosyvoice.cli`)."""

import sys

from cosyvoice.cli import main

if __name__ == "__main__":
    sys.exit(main())
