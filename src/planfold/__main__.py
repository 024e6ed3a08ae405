"""``python -m planfold``: the ``planfold`` command line, for an environment
whose scripts folder is not on the PATH."""

import sys

from .adapters.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
