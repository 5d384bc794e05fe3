"""Headless Chromium for the UI tests: the DOM after the page's script ran, and the
numbers it shows (every number on the page carries data-metric / data-value)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest

_SCOPES = ("data-component", "data-worker", "data-supervisor", "data-scope")


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("the UI tests need Debian's chromium (apt-get install chromium; as root, "
                    "scripts/test.sh installs it: scripts/system-deps.sh)")
    return path


def dump_dom(url: str, budget_ms: int = 4000) -> str:
    """The page's DOM once `budget_ms` of virtual time passed: the refreshes that
    happen in that time ran (virtual time waits for pending fetches)."""
    with tempfile.TemporaryDirectory(prefix="storm-zmq-chromium-") as profile:
        result = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--no-first-run",
             f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


class PageValues(HTMLParser):
    """Collects ``(scope, metric) -> data-value`` for every element with
    data-metric and data-value, where scope is ("component", name), ("worker", key)
    ("supervisor", id), ("topology", "topology") or ("cluster", "cluster"); plus the
    workers' log links, the body's attributes, the graph's nodes and
    edges and the error texts."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.values: dict[tuple[tuple[str, str], str], str] = {}
        self.texts: dict[tuple[tuple[str, str], str], str] = {}
        self.body: dict[str, str] = {}
        self.nodes: list[str] = []
        self.edges: list[str] = []
        self.log_links: dict[str, str] = {}  # worker key -> href of its log's link
        self.errors: dict[str, list[str]] = {}
        self._open: list[tuple[str, tuple[tuple[str, str], str] | None, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.body = a
        if "data-node" in a:
            self.nodes.append(a["data-node"])
        if "data-edge" in a:
            self.edges.append(a["data-edge"])
        if "data-log" in a:
            self.log_links[a["data-log"]] = a.get("href", "")
        key = None
        if "data-metric" in a and "data-value" in a:
            scope = next(((s.removeprefix("data-"), a[s]) for s in _SCOPES if s in a), None)
            if scope is not None and scope[0] == "scope":  # ("topology" | "cluster",) * 2
                scope = (a["data-scope"], a["data-scope"])
            if scope is not None:
                key = (scope, a["data-metric"])
                self.values[key] = a["data-value"]
        if tag not in ("br", "img", "meta", "link", "input", "path", "rect"):
            self._open.append((tag, key, a.get("data-error-of")))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self._open:
            return
        _, key, error_of = self._open[-1]
        if key is not None:
            self.texts[key] = self.texts.get(key, "") + data
        if error_of is not None:
            self.errors.setdefault(error_of, []).append(data)

    def number(self, scope: tuple[str, str], metric: str) -> float | None:
        value = self.values[(scope, metric)]
        return None if value == "" else float(value)
