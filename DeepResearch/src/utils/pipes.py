"""A reader that closes the pipe early (`deepresearch-memory list | head`) ends the output.

Writing to a pipe whose reader is gone raises BrokenPipeError, at a print or at the final
flush. That is the normal end of a command piped into `head`: exit status 0, nothing on
stderr. Standard output is pointed at /dev/null so the interpreter's own flush at exit does
not raise again ("Exception ignored ... BrokenPipeError", exit status 120).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def closed_pipe_ends_quietly(command: Callable[[], int]) -> int:
    """`command()`'s exit status, with its output flushed; 0 when the reader closed the pipe."""
    try:
        status = command()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
