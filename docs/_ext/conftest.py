"""Make the modules next to these tests importable (docs/_ext is not a package)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
