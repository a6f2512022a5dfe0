import sys

from xlat.cli import main

sys.exit(main())
