"""`python -m migrate` is the same as the `zk2kafka` console script."""

import sys

from migrate.cli import main

sys.exit(main())
