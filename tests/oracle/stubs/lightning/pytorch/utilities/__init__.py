def rank_zero_only(fn):
    """Single-process run: every call is rank zero."""
    return fn
