"""Run the command line: ``python -m gpusimhash``."""

import sys

from gpusimhash.cli import main

sys.exit(main())
