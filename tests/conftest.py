"""Suite-wide fixtures. The embedding model is always the offline one shipped in a wheel."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
