from __future__ import annotations

import sys

from endpointslice_operator.cli import main

sys.exit(main())
