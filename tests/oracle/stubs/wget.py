"""Stand-in: matcha imports it for checkpoint downloads the oracle never makes."""
