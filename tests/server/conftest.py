"""A second real app for the admin-token, bounds and property-based tests."""

from __future__ import annotations

import pytest

from tests.conftest import RunningApp, start_app, stop_app

ADMIN_TOKEN = "test-admin-token-7f3a"


@pytest.fixture(scope="session")
def guarded_app(tmp_path_factory) -> RunningApp:
    """Listens on 0.0.0.0 (so admin actions need the token), one synthesis slot and no
    queue (a second request is refused with 429), room for one saved voice, short texts; pages
    of https://embed.example may send requests (--allowed-origins)."""
    workdir = tmp_path_factory.mktemp("guarded")
    app = start_app(workdir, "--host", "0.0.0.0", "--admin-token", ADMIN_TOKEN,
                    "--concurrency", "1", "--queue-size", "0", "--max-saved-voices", "1",
                    "--max-text-chars", "120", "--allowed-origins", "https://embed.example")
    yield app
    stop_app(app)
