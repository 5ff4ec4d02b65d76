class Logger:
    """Placeholder base class; matcha's instantiators only name it."""
