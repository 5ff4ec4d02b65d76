"""Stand-in for the training framework that matcha imports at module level (oracle process only)."""


class Callback:
    """Placeholder base class; matcha's instantiators only name it."""
