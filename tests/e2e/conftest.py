"""Real-browser fixtures: headless system Chromium driven by Playwright, one app per worker.

Chromium comes from Debian (``/usr/bin/chromium``; test.sh installs it when missing);
Playwright's own browser downloads are never used. A failing test leaves a full-page
screenshot in ``tests/artifacts/<test name>.png``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import start_app, stop_app
from tests.process_tools import stop_by_pidfile

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item, so fixtures can see whether the test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists() and not shutil.which("chromium"):
        pytest.fail("system chromium is missing: run `bash test.sh` (it installs the Debian "
                    "package) or `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        exe = str(CHROMIUM) if CHROMIUM.exists() else shutil.which("chromium")
        # --no-sandbox: CI runs the tests as root, where Chromium's sandbox refuses to start.
        browser = pw.chromium.launch(executable_path=exe, headless=True,
                                     args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def e2e_app(tmp_path_factory):
    """The real app for browser tests, one per worker process for every module that uses it
    (an app start is ~13 CPU-s with its models; each module checks only what it made itself);
    restartable (no cooldown), stopped by its pidfile at the end because a restart replaces
    the process this fixture started."""
    workdir = tmp_path_factory.mktemp("e2e")
    app = start_app(workdir, "--restart-cooldown-s", "0", "--drain-timeout-s", "10")
    yield app
    stop_app(app)
    stop_by_pidfile(app.pidfile)


@contextmanager
def open_page(browser, url: str, request) -> Iterator:
    """A fresh browser context on the app's page; a full-page screenshot if the test failed."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(url + "/")
    page.wait_for_selector("#generate")
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", request.node.name)
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    context.close()


@pytest.fixture
def page(browser, e2e_app, request):
    with open_page(browser, e2e_app.url, request) as page:
        yield page
