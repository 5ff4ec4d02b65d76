"""CUDA out-of-memory handling: free, retry once, then a clear error.

The retry happens *after* the ``except`` block, when the exception — and the frames
and tensors its traceback keeps alive — has been dropped; freeing inside the handler
would free nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from cosyvoice.errors import ModelError
from cosyvoice.lifecycle import resources

logger = logging.getLogger(__name__)

T = TypeVar("T")

OOM_MESSAGE = ("The GPU ran out of memory twice for this request (memory was freed in "
               "between). Try a shorter text, fewer requests at once, 'Unload idle models' "
               "or 'Restart application' in the Models tab.")


def _oom_types() -> tuple[type[BaseException], ...]:
    import torch

    return (torch.OutOfMemoryError,)


def call_with_oom_retry(fn: Callable[[], T], attempts: int = 2) -> T:
    """``fn()``; on CUDA OOM free cached memory and try again, up to ``attempts`` times."""
    oom = _oom_types()
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except oom as e:
            logger.warning("CUDA out of memory (attempt %d/%d): %s", attempt, attempts,
                           str(e).splitlines()[0] if str(e) else "")
        # Outside the except block: the exception and its traceback are gone now.
        freed = resources.free_memory()
        logger.info("freed after OOM: %s, allocator %s", freed, resources.cuda_allocator())
    raise ModelError(OOM_MESSAGE)
