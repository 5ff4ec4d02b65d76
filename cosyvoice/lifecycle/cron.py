"""The nightly restart: one crontab line running restart.sh, added or removed idempotently.

    python -m cosyvoice.lifecycle.cron install [--time 03:00] [--keep-outputs]
    python -m cosyvoice.lifecycle.cron remove
    python -m cosyvoice.lifecycle.cron show
    bash run.sh --install-cron [HH:MM]   /   bash run.sh --remove-cron

The line ends with a marker naming this install's folder, so two installs never touch
each other's line and every other crontab line is left exactly as it was. The crontab
is read and written with ``crontab -l`` / ``crontab -`` (``CRONTAB_CMD`` overrides the
command), or with ``--crontab-file PATH`` directly (tests, or systems that use a file).
``COSYVOICE_*`` variables set at install time are written into the line, so the nightly
restart finds the same pidfile, port and folders.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cosyvoice.settings import ROOT

logger = logging.getLogger(__name__)

MARKER = "# cosyvoice-webui nightly restart"
_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


class CronError(RuntimeError):
    """The crontab could not be read or written."""


def marker(root: Path = ROOT) -> str:
    return f"{MARKER} [{root}]"


def parse_time(hhmm: str) -> tuple[int, int]:
    m = _TIME.match(hhmm.strip())
    if not m:
        raise ValueError(f"time {hhmm!r} is not HH:MM (00:00–23:59), e.g. 03:00")
    return int(m.group(1)), int(m.group(2))


def _cron_quote(word: str) -> str:
    return shlex.quote(word).replace("%", r"\%")  # cron turns a bare % into a newline


def cron_line(hhmm: str = "03:00", root: Path = ROOT, keep_outputs: bool = False,
              env: Mapping[str, str] | None = None) -> str:
    """``M H * * * cd ROOT && VARS bash restart.sh --reason cron >> LOG 2>&1 # marker``"""
    hour, minute = parse_time(hhmm)
    env = dict(os.environ if env is None else env)
    pairs = {k: v for k, v in sorted(env.items()) if k.startswith("COSYVOICE_")}
    log_dir = Path(pairs.get("COSYVOICE_LOG_DIR", root / "logs"))
    words = [f"{k}={_cron_quote(v)}" for k, v in pairs.items()]
    words += ["bash", _cron_quote(str(root / "restart.sh")), "--reason", "cron"]
    if keep_outputs:
        words.append("--keep-outputs")
    cmd = (f"cd {_cron_quote(str(root))} && mkdir -p {_cron_quote(str(log_dir))} && "
           f"{' '.join(words)} >> {_cron_quote(str(log_dir / 'restart.log'))} 2>&1")
    return f"{minute} {hour} * * * {cmd} {marker(root)}"


@dataclass
class Crontab:
    """The user's crontab through the ``crontab`` command, or a plain file."""

    file: Path | None = None
    command: str = "crontab"

    @classmethod
    def from_env(cls, file: str | None = None) -> Crontab:
        return cls(Path(file) if file else None, os.environ.get("CRONTAB_CMD", "crontab"))

    def read(self) -> str:
        if self.file is not None:
            return self.file.read_text(encoding="utf-8") if self.file.exists() else ""
        done = self._run(["-l"])
        if done.returncode != 0:
            if "no crontab" in done.stderr.lower():
                return ""
            raise CronError(f"`{self.command} -l` failed: {done.stderr.strip()}")
        return done.stdout

    def write(self, text: str) -> None:
        if self.file is not None:
            self.file.write_text(text, encoding="utf-8")
            return
        done = self._run(["-"], text)
        if done.returncode != 0:
            raise CronError(f"`{self.command} -` failed: {done.stderr.strip()}")

    def _run(self, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
        try:
            return subprocess.run([*shlex.split(self.command), *args], input=stdin,
                                  capture_output=True, text=True, timeout=30)
        except FileNotFoundError as e:
            raise CronError(f"`{self.command}` not found: install cron (e.g. apt-get install "
                            "cron) or pass --crontab-file") from e


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""


def install(tab: Crontab, line: str, root: Path = ROOT) -> bool:
    """Put ``line`` in place of this install's line; True when the crontab changed."""
    old = _lines(tab.read())
    new = [ln for ln in old if marker(root) not in ln] + [line]
    if new == old:
        return False
    tab.write(_join(new))
    return True


def remove(tab: Crontab, root: Path = ROOT) -> bool:
    """Drop this install's line; True when there was one."""
    old = _lines(tab.read())
    new = [ln for ln in old if marker(root) not in ln]
    if new == old:
        return False
    tab.write(_join(new))
    return True


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="[cron] %(message)s")
    p = argparse.ArgumentParser(prog="python -m cosyvoice.lifecycle.cron",
                                description="Install or remove the nightly restart line.")
    p.add_argument("action", choices=["install", "remove", "show"])
    p.add_argument("--time", default="03:00", help="HH:MM, local time of the cron daemon")
    p.add_argument("--keep-outputs", action="store_true", help="keep generated audio")
    p.add_argument("--crontab-file", help="edit this file instead of the user's crontab")
    ns = p.parse_args(argv)
    tab = Crontab.from_env(ns.crontab_file)
    try:
        if ns.action == "show":
            mine = [ln for ln in _lines(tab.read()) if marker() in ln]
            logger.info("%s", mine[0] if mine else "no nightly restart installed")
        elif ns.action == "install":
            line = cron_line(ns.time, keep_outputs=ns.keep_outputs)
            changed = install(tab, line)
            logger.info("%s: %s", "installed" if changed else "already installed", line)
        else:
            logger.info("removed" if remove(tab) else "nothing to remove")
    except (CronError, ValueError) as e:
        logger.error("%s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
