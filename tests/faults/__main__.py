"""`python -m tests.faults --seed N --rounds R`: one run of the fault harness, replayable."""

import sys

from tests.faults.harness import main

sys.exit(main())
