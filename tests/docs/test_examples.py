"""Every fenced Python block of README.md and docs/*.md runs as written, in a fresh process
per page (a page's blocks in order, in one namespace), in an empty directory. A block
that needs the HTTP server runs against a ``wayline serve --demo`` this test starts; a block
that cannot run says why in its ``docs-test: skip`` marker, and the skips are listed here;
a PostgreSQL block runs on the suite's server (``tests/docs/blocks.py`` has the markers)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from blocks import blocks
from pg import schema_url

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
PAGES = [p for p in PAGES if blocks(ROOT, p)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``wayline serve --demo`` as a user starts it: its URL and the key it printed."""
    where = tmp_path_factory.mktemp("docs-server")
    port = _free_port()
    cmd = [sys.executable, "-m", "wayline.cli.main", "serve", "--demo", "--cpus", "all"]
    cmd += ["--db", f"sqlite:///{where / 'demo.db'}", "--port", str(port)]
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(cmd, cwd=where, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    key = ""
    for line in proc.stdout:
        if line.startswith("wl_"):
            key = line.strip()
        if line.startswith("serving"):
            break
    assert key, "wayline serve --demo printed no key"
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/ok", timeout=1)
            break
        except httpx.TransportError:
            assert proc.poll() is None, "wayline serve --demo exited"
            assert time.monotonic() < deadline, "wayline serve --demo did not answer in 30 s"
            time.sleep(0.05)
    yield url, key
    proc.terminate()
    proc.wait(30)


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_of_the_page_runs(
    page: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    markers = {b.marker for b in blocks(ROOT, page)}
    if "server" in markers:
        env["WAYLINE_DOCS_URL"], env["WAYLINE_DOCS_KEY"] = request.getfixturevalue("demo_server")
    if "postgres" in markers:
        env["WAYLINE_DOCS_PG"] = schema_url(request.getfixturevalue("pg_base_url"))
    done = subprocess.run(
        [sys.executable, str(HERE / "run_page.py"), str(ROOT), page],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"{page}: an example does not run as written\n{done.stderr}"
    ran = [b.name for b in blocks(ROOT, page) if b.marker != "skip"]
    said = [line for line in done.stdout.splitlines() if line.startswith("docs-test: ran ")]
    assert said == [f"docs-test: ran {name}" for name in ran]


def test_each_block_not_run_says_why() -> None:
    skipped = [b for page in PAGES for b in blocks(ROOT, page) if b.marker == "skip"]
    unexplained = [b.name for b in skipped if not b.reason]
    assert not unexplained, f"a docs-test: skip marker needs a reason: {unexplained}"
    print("".join(f"\nnot run: {b.name}: {b.reason}" for b in skipped))


def test_a_failing_block_is_named_with_its_page_and_line(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("```python\nx = 1\n```\ntext\n```python\ny = x + nope\n```\n")
    done = subprocess.run(
        [sys.executable, str(HERE / "run_page.py"), str(tmp_path), "p.md"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(HERE)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "p.md block 2 (line 6) failed" in done.stderr
    assert 'File "p.md block 2 (line 6)", line 6' in done.stderr
    assert "NameError: name 'nope' is not defined" in done.stderr


def test_the_extractor_finds_blocks_and_markers(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text(
        "# t\n```python\nx = 1\n```\n<!-- docs-test: skip: needs a GPU -->\n```python\n"
        "y = 2\n```\n```bash\nls\n```\n<!-- docs-test: server -->\n```py\nz = 3\n```\n"
    )
    found = blocks(tmp_path, "p.md")
    assert [(b.index, b.line, b.code, b.marker, b.reason) for b in found] == [
        (1, 3, "x = 1\n", None, ""),
        (2, 7, "y = 2\n", "skip", "needs a GPU"),
        (3, 14, "z = 3\n", "server", ""),
    ]
    assert found[0].name == "p.md block 1 (line 3)"
