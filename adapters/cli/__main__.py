"""``python -m planfold.adapters.cli``: the ``planfold`` command."""

import sys

from .entry import main

sys.exit(main())
