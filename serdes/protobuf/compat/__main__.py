"""``python -m serdes.protobuf.compat OLD.desc NEW.desc [--message pkg.Msg] [--json]`` (see ``_cli``)."""

import sys

from ._cli import main

sys.exit(main())
