"""``python -m planfold.adapters.cli``: the ``planfold`` command."""

import sys

from planfold.adapters.cli.main import main

sys.exit(main())
