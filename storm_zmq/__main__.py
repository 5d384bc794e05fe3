"""`python -m storm_zmq ...`: the `storm-zmq` command, for an environment whose
scripts directory is not on PATH."""

import sys

from storm_zmq.cli.main import main

sys.exit(main())
