"""`tau data pull` against a hostile or broken upstream and destination: a body longer
than the pinned file, a server too slow to finish, SIGTERM mid-download, a destination
that cannot be made. Each is one `error:` line (or exit 143 for SIGTERM) and leaves no
temporary files; the downloads go to a real local server (`local_upstream`)."""

from __future__ import annotations

import gzip
import re
import signal
import socket
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tau_bench.data import download as download_module
from tau_bench.data.download import TIMEOUT, Progress, download
from tau_bench.data.errors import ChecksumError, PullError
from tau_bench.data.pinned import Source
from tests.tau_bench.data.local_upstream import (
    LocalUpstream,
    local_upstream,
    send_file,
    send_unbounded,
)

TAU = str(Path(sys.executable).parent / "tau")
DEADLINE = 900.0  # download.DEADLINE, as the messages say it
SUITES = ["tau-bench", "tau3"]
HANG_GUARD = 30.0  # seconds: far above the 1 s an attempt is given, far below 60 s


def _pull(upstream: LocalUpstream, dest: Path, suite: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [TAU, "data", "pull", "--dest", str(dest), "--suite", suite],
        env=upstream.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.mark.parametrize("suite", SUITES)
def test_a_body_longer_than_the_pinned_file_stops_the_pull_without_retries(
    tmp_path: Path, suite: str
) -> None:
    """A server that sends more than the pinned size (here 8 MiB more; an endless one
    the same) is cut off once it passes it, and not asked again."""

    def too_much(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        send_unbounded(conn, 16 << 20, server.stop)

    out = tmp_path / "out"
    out.mkdir()
    with local_upstream(tmp_path, too_much) as upstream:
        proc = _pull(upstream, out / "data", suite)
        _, stderr = proc.communicate(timeout=300)
        requests = list(upstream.requests)
    assert proc.returncode == 2, stderr
    line = _one_error_line(stderr)
    assert "sends more than" in line and "its pinned size" in line, line
    assert "not retried" in line, line
    assert len(requests) == 1, requests
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("suite", SUITES)
def test_sigterm_mid_download_removes_the_temporary_directory(tmp_path: Path, suite: str) -> None:
    def hold(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        server.stop.wait()

    out = tmp_path / "out"
    out.mkdir()
    with local_upstream(tmp_path, hold) as upstream:
        proc = _pull(upstream, out / "data", suite)
        try:
            assert upstream.connected.wait(120), "the pull never reached the server"
            # The staging directory exists from before the first download.
            assert [p.name.startswith(".data.partial-") for p in out.iterdir()] == [True]
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr, stderr
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("suite", SUITES)
def test_a_destination_that_cannot_be_made_is_one_line(tmp_path: Path, suite: str) -> None:
    def unexpected(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        send_file(conn, b"")

    (tmp_path / "afile").write_text("not a directory")
    cases = {
        tmp_path / "afile" / "sub": f"{tmp_path / 'afile'} is not a directory",
        tmp_path / "afile" / "sub" / "deeper": f"{tmp_path / 'afile'} is not a directory",
        Path("/proc/tau-data-test"): "cannot create the data directory /proc/tau-data-test",
    }
    with local_upstream(tmp_path, unexpected) as upstream:
        for dest, problem in cases.items():
            proc = _pull(upstream, dest, suite)
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 2, stderr
            line = _one_error_line(stderr)
            assert problem in line, line
        assert upstream.requests == []
    assert sorted(p.name for p in tmp_path.iterdir() if not p.suffix) == ["afile"]


# -- `download` itself, against the same server over plain HTTP --------------------------


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=TIMEOUT, trust_env=False) as http:
        yield http


def _download(client: httpx.Client, upstream: LocalUpstream, source: Source) -> bytes:
    return download(client, f"{upstream.base}/{source.path}", source, Progress(False, 0, ""))


def test_an_announced_length_beyond_the_pinned_size_is_refused_before_the_body(
    tmp_path: Path, client: httpx.Client
) -> None:
    body = b"y" * 5000

    def announce(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        send_file(conn, body)

    with local_upstream(tmp_path, announce) as upstream:
        # A ChecksumError (the file cannot have its pinned sha256), never retried.
        with pytest.raises(ChecksumError, match=r"sends more than 4,000 bytes \(it announces"):
            _download(client, upstream, Source("db.json", "0" * 64, 4000))
        assert upstream.requests == ["db.json"]
        assert _download(client, upstream, Source("db.json", "0" * 64, 5000)) == body


def test_a_file_without_a_pinned_size_has_a_cap(
    tmp_path: Path, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(download_module, "UNPINNED_LIMIT", 100_000, raising=False)

    def too_much(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        send_unbounded(conn, 1 << 20, server.stop)

    with local_upstream(tmp_path, too_much) as upstream:
        with pytest.raises(PullError, match=r"sends more than 100,000 bytes, the limit for a"):
            _download(client, upstream, Source("tools/think.py"))
        assert upstream.requests == ["tools/think.py"]


class _Clock:
    """Monotonic time that moves on `step` seconds at every look (as if the server took
    that long between one look and the next)."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_download_slower_than_the_deadline_stops(
    tmp_path: Path, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes arrive (no read timeout fires) but later than `DEADLINE` after the start:
    the download stops, and is not tried again."""
    monkeypatch.setattr(download_module, "_clock", _Clock(DEADLINE + 1), raising=False)

    def trickle(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        send_file(conn, b"z" * 3000)

    with local_upstream(tmp_path, trickle) as upstream:
        with pytest.raises(PullError, match=r"did not arrive within 900 s after [0-9,]+ bytes"):
            _download(client, upstream, Source("db.json", "0" * 64, 3000))
        assert upstream.requests == ["db.json"]


def test_the_deadline_covers_the_retries(
    tmp_path: Path, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(download_module, "_clock", _Clock(DEADLINE + 1), raising=False)

    def unavailable(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")

    with local_upstream(tmp_path, unavailable) as upstream:
        with pytest.raises(
            PullError, match=r"did not arrive within 900 s \(last attempt: HTTP 503"
        ):
            _download(client, upstream, Source("db.json", "0" * 64, 3000))
        assert upstream.requests == ["db.json"]


def _send_encoded(conn: socket.socket, body: bytes, coding: str = "gzip") -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n"
        % (coding.encode(), len(body))
        + body
    )


def test_a_compressed_body_is_bounded_by_the_file_size_not_the_bytes_sent(
    tmp_path: Path, client: httpx.Client
) -> None:
    """A gzip bomb (64 KiB sent, 64 MiB decoded) stops one byte past the pinned size,
    without ever holding more than a little of it (httpx decodes a whole network chunk
    before anyone can count it); a file sent gzipped although asked for plain is the file."""
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    real = b'{"users": {}}' * 300

    def answer(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        _send_encoded(conn, bomb if path == "db.json" else gzip.compress(real))

    with local_upstream(tmp_path, answer) as upstream:
        tracemalloc.start()
        try:
            with pytest.raises(ChecksumError, match=r"sends more than 4,000 bytes"):
                _download(client, upstream, Source("db.json", "0" * 64, 4000))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 4 << 20, peak
        assert _download(client, upstream, Source("ok.json", "0" * 64, len(real))) == real


@pytest.mark.parametrize(
    ("body", "coding", "needle"),
    [
        (gzip.compress(b"x" * 3000)[:-20], "gzip", "ends before its compressed stream does"),
        (b"not gzip at all", "gzip", "undecodable gzip body"),
        (b"whatever", "br", "'br' content encoding, which was not asked for"),
    ],
    ids=["truncated-gzip", "not-gzip", "brotli"],
)
def test_a_broken_or_unasked_for_encoding_is_one_error(
    tmp_path: Path, client: httpx.Client, body: bytes, coding: str, needle: str
) -> None:
    def answer(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        _send_encoded(conn, body, coding)

    with (
        local_upstream(tmp_path, answer) as upstream,
        pytest.raises(PullError, match=re.escape(needle)),
    ):
        _download(client, upstream, Source("db.json", "0" * 64, 3000))


def test_no_wait_lasts_past_the_deadline(
    tmp_path: Path, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt that starts with 0.3 s of the deadline left waits for the server at most
    `MIN_WAIT` (1 s; not a whole 60 s read timeout) before the pull stops."""
    looks = iter([0.0, DEADLINE - 0.3])
    monkeypatch.setattr(download_module, "_clock", lambda: next(looks, DEADLINE + 1), raising=False)

    def hold(server: LocalUpstream, path: str, conn: socket.socket) -> None:
        server.stop.wait()

    outcome: list[BaseException] = []

    def pull() -> None:
        try:
            _download(client, upstream, Source("db.json", "0" * 64, 3000))
        except BaseException as exc:
            outcome.append(exc)

    with local_upstream(tmp_path, hold) as upstream:
        worker = threading.Thread(target=pull, daemon=True)
        worker.start()
        worker.join(HANG_GUARD)
        assert not worker.is_alive(), "the download waited past its deadline"
    (error,) = outcome
    assert isinstance(error, PullError) and "did not arrive within 900 s" in str(error)


@pytest.mark.parametrize(
    ("repo", "variable"),
    [
        ("sierra-research/tau-bench", "TAU_BENCH_DATA"),
        ("sierra-research/tau2-bench", "TAU3_BENCH_DATA"),
    ],
)
def test_the_offline_hint_names_the_suite_s_own_variable(repo: str, variable: str) -> None:
    """`tau data pull --suite tau3` offline said to set TAU_BENCH_DATA, v1's variable."""
    import respx

    from tau_bench.data.download import raw_url

    url = raw_url("data/x.json", "0" * 40, repo)
    with respx.mock() as router, httpx.Client() as client:
        router.get(url).respond(404)
        with pytest.raises(PullError) as failed:
            download(client, url, Source("data/x.json"), Progress(False, 0, ""))
    assert str(failed.value).endswith(
        f"set {variable} (or --data-dir) to a "
        + ("τ³ data directory" if "tau2" in repo else "τ-bench data directory")
    )
