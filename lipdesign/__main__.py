"""``python -m lipdesign``: the command line of ``lipdesign.cli``, with its exit codes (0, 1 for a failed
verification or audit, 2 for bad input)."""

import sys

from lipdesign.cli import main

if __name__ == "__main__":
    sys.exit(main())
