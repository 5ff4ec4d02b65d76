"""The guides agree with the code: every ``python -m cosyvoice …`` command written in the
README and docs/ parses with the CLI's own parser, and every route the README's API table
names is one the app serves (its OpenAPI schema), and the other way round every public route
is named in the README or docs/api.md. A renamed flag or route fails here, not in a user's
terminal."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.conftest import ROOT, get_json

GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
          ROOT / "deploy" / "README.md"]
CLI = re.compile(r"python -m cosyvoice (.+)")
ROUTE = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/[A-Za-z0-9_/{}.-]*)")
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)


def cli_commands() -> list[tuple[str, str]]:
    """(where, argument string) for each CLI command in a guide's code blocks (prose that
    only names a command is not an example to run)."""
    found = []
    for path in GUIDES:
        text = path.read_text("utf-8")
        for block in FENCE.finditer(text):
            first = text[:block.start(1)].count("\n") + 1
            lines = block.group(1).replace("\\\n", " ").splitlines()
            for i, line in enumerate(lines):
                m = CLI.search(line)
                if m and not m.group(1).startswith(("cosyvoice.", "[")):
                    found.append((f"{path.relative_to(ROOT)}:{first + i}", m.group(1)))
    return found


def _words(args: str) -> list[str]:
    words = shlex.split(args.split(" | ")[0].split(" > ")[0], comments=True)
    return [w for w in words if w not in ("|",)]


@pytest.mark.parametrize("where, args", cli_commands(), ids=lambda v: str(v)[:60])
def test_every_cli_command_in_the_guides_parses(where, args):
    from cosyvoice.cli.entry import build_parser, engine_capabilities

    words = _words(args)
    parser = build_parser(engine_capabilities(words))
    try:
        parser.parse_args(words)
    except SystemExit as e:
        pytest.fail(f"{where}: `python -m cosyvoice {args}` does not parse (exit {e.code})")


def test_the_guides_show_commands_at_all():
    assert len(cli_commands()) >= 15


def _normal(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path.rstrip("/"))


def readme_routes() -> set[tuple[str, str]]:
    """The ``METHOD /path`` pairs of the README's API table."""
    text = (ROOT / "README.md").read_text("utf-8")
    table = text[text.index("## API in brief"):]
    table = table[:table.index("\n## ", 3)]
    return {(m, _normal(p)) for m, p in ROUTE.findall(table)}


def test_the_readme_names_only_routes_the_app_serves_and_all_of_them(running_app):
    _, schema = get_json(running_app.url + "/openapi.json")
    served = {(method.upper(), _normal(path)) for path, item in schema["paths"].items()
              for method in item}
    named = readme_routes()
    assert len(named) >= 15
    assert named - served == set(), "the README names routes the app does not serve"
    documented = named | {(m, _normal(p)) for m, p in ROUTE.findall(
        (ROOT / "docs" / "api.md").read_text("utf-8"))}
    assert served - documented == set(), "routes neither the README nor docs/api.md names"
