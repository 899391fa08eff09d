"""``python -m emr``: stage, create clusters, add steps, wait, EMR on EKS (see emr/cli.py)."""

import sys

from emr.cli import main

sys.exit(main())
