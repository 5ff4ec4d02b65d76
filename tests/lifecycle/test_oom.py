"""CUDA OOM: free, retry once, then a clear ModelError."""

from __future__ import annotations

import pytest
import torch

from cosyvoice.errors import ModelError
from cosyvoice.lifecycle.oom import OOM_MESSAGE, call_with_oom_retry


class OomOnce:
    """Raises torch's real OutOfMemoryError for the first ``fails`` calls."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.fails:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return "audio"


def test_retries_once_after_oom():
    fn = OomOnce(1)
    assert call_with_oom_retry(fn) == "audio" and fn.calls == 2


def test_second_oom_gives_clear_error():
    fn = OomOnce(5)
    with pytest.raises(ModelError) as info:
        call_with_oom_retry(fn)
    assert str(info.value) == OOM_MESSAGE and fn.calls == 2
    assert info.value.__cause__ is None  # no traceback (and its tensors) kept


def test_other_errors_pass_through_untouched():
    def bad():
        raise ValueError("not an OOM")

    with pytest.raises(ValueError, match="not an OOM"):
        call_with_oom_retry(bad)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_real_cuda_oom_is_freed_and_reported():
    """Allocate far past the card's memory: a real OOM, then the allocator is back."""
    torch.cuda.init()
    base = torch.cuda.memory_allocated()
    total = torch.cuda.get_device_properties(0).total_memory
    kept = []

    def hog():
        kept.append(torch.empty(1024, device="cuda"))
        return torch.empty(int(total * 2) // 4, dtype=torch.float32, device="cuda")

    with pytest.raises(ModelError):
        call_with_oom_retry(hog)
    kept.clear()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == base
