"""``python -m planfold.adapters.cli``: the ``planfold`` command."""

import sys

from .main import main

sys.exit(main())
