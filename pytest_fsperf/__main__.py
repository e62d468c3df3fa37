"""python -m pytest_fsperf: the fsperf command."""

import sys

from .cli import main

sys.exit(main())
