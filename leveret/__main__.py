"""`python -m leveret` is the `leveret` command."""

import sys

from .cli.main import main

sys.exit(main())
