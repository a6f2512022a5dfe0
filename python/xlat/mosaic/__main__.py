"""``python -m xlat.mosaic run|hugepages ...``: the mosaic allocator's commands without the main
xlat CLI (an entry point, like ``python -m xlat``; the library itself never imports the CLI)."""

import sys

from xlat.cli.run import mosaic_main

sys.exit(mosaic_main())
