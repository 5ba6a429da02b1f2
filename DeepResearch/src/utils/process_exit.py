"""A command that is about to exit does not need the interpreter's final garbage collection.

Once sentence-transformers is imported (torch, transformers, scikit-learn, triton), the
process holds hundreds of thousands of objects, and the collection CPython runs while it
shuts down walks them all: ~1 s of every memory-enabled `deepresearch` run on a 2-core
machine, after the answer is printed. Freezing the heap moves every object into the
permanent generation, which that collection skips. atexit handlers (the memory client's
exit flush among them), stream flushing and module teardown run exactly as before; only
memory the OS reclaims anyway is not walked.
"""

from __future__ import annotations

import gc


def skip_final_collection() -> None:
    """Call last, when the command has done its work and is returning to exit."""
    gc.freeze()
