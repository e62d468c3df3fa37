"""python -m pytest_fsperf: the fsperf command."""

import sys

from pytest_fsperf.cli import main

sys.exit(main())
