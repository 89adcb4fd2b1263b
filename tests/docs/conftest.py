"""Puts this folder on sys.path for its helper modules (blocks, run_page)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
