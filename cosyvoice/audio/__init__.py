"""Audio I/O, resampling and mel analysis shared by every stage."""
