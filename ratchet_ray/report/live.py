"""The live view of a running run (``ratchet report --watch RUN``): the report ``ratchet report``
writes (``html.build_report``), served on 127.0.0.1 and rebuilt whenever the evidence changes,
in a page that reloads itself when a newer one exists (docs/report.md, "The live view").

Contracts:
- ``evidence_signature(paths)``: a digest of the names, sizes and times of what the report reads
  (evidence parts, ``loop.json``, round summaries, ``stopped.json``, skill files); a folder
  walk, no DuckDB.
- ``LiveReport(paths, port=0, interval_s=5, **report_options)``: ``serve()`` answers ``GET /``
  with the current signature's report (built at most once per change, one build at a time)
  plus a status line (``#live-status``) and a script that polls ``GET /signature`` every
  ``interval_s`` and reloads on a change; ``GET /report.html`` is the page without the script.
  It binds 127.0.0.1 only (``url`` says the port) and builds in a private temp folder removed
  by ``close``. A failed build keeps the last good page and says why in the status line.
"""

from __future__ import annotations

import hashlib
import html
import logging
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.report.html import build_report
from ratchet_ray.report.sweep import expand

log = logging.getLogger(__name__)
WATCHED = ("loop.json", "stopped.json")
WATCHED_GLOBS = ("evidence/**/*.parquet", "round_*/summary.json", "skills/*.yaml")


def evidence_signature(paths: Iterable[Path]) -> str:
    """The digest of what the report reads (module contract)."""
    digest = hashlib.sha256()
    for run_dir in expand(list(paths)).run_dirs:
        files = [run_dir / name for name in WATCHED]
        for pattern in WATCHED_GLOBS:
            files += run_dir.glob(pattern)
        for path in sorted(files):
            try:
                st = path.stat()
            except FileNotFoundError:  # not written yet, or replaced as we looked
                continue
            digest.update(f"{path.relative_to(run_dir)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


_SCRIPT = """<script id="live-watch">(function () {
  var built = %(signature)r;
  function poll() {
    fetch("/signature", {cache: "no-store"}).then(function (r) { return r.text(); })
      .then(function (now) { if (now.trim() !== built) { location.reload(); } })
      .catch(function () { document.getElementById("live-status").dataset.offline = "1"; });
  }
  setInterval(poll, %(interval_ms)d);
})();</script>"""


class LiveReport:
    """A loopback HTTP server of the run's live report (module contract)."""

    def __init__(self, paths: Iterable[str | Path], *, port: int = 0, interval_s: float = 5.0,
                 **report_options: Any):
        self.paths = [Path(p) for p in paths]
        expand(self.paths)  # not a run dir or sweep: refused now, before any port is bound
        self.interval_s = interval_s
        self.report_options = report_options
        self.folder = Path(tempfile.mkdtemp(prefix="ratchet-live-"))
        self.lock = threading.Lock()
        self.built: tuple[str, str] | None = None  # (signature, page)
        self.problem = ""
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def page(self, live: bool = True) -> str:
        """The report of the current evidence (rebuilt when the signature moved)."""
        with self.lock:
            signature = evidence_signature(self.paths)
            if self.built is None or self.built[0] != signature:
                try:
                    out = build_report(self.paths, self.folder / "report.html",
                                       **self.report_options)
                    self.built, self.problem = (signature, out.read_text(encoding="utf-8")), ""
                except Exception as exc:  # noqa: BLE001 - a page mid-write: keep the last one
                    self.problem = f"{type(exc).__name__}: {exc}"
                    log.info("live report: build failed (%s); serving the last page", self.problem)
                    if self.built is None:
                        raise
            signature, text = self.built
        if not live:
            return text
        stamp = time.strftime("%H:%M:%S", time.localtime())
        note = f" (last build failed: {html.escape(self.problem)})" if self.problem else ""
        status = (f'<div id="live-status" data-signature="{signature}" style="position:sticky;'
                  'top:0;z-index:9;background:#fffbe6;border-bottom:1px solid #e6d9a3;'
                  f'padding:4px 12px;font:13px sans-serif">Live: built from the evidence at '
                  f'{stamp}; reloads as rounds finish (checks every {self.interval_s:g} s){note}'
                  "</div>")
        script = _SCRIPT % {"signature": signature, "interval_ms": int(self.interval_s * 1000)}
        body_at = text.find(">", text.find("<body")) + 1
        end_at = text.rfind("</body>")
        return text[:body_at] + status + text[body_at:end_at] + script + text[end_at:]

    def _handler(self):
        live = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                route = self.path.split("?", 1)[0]
                try:
                    if route == "/signature":
                        self._send(evidence_signature(live.paths), "text/plain")
                    elif route in ("/", "/index.html", "/report.html"):
                        self._send(live.page(live=route != "/report.html"), "text/html")
                    elif route == "/favicon.ico":  # browsers ask; the report has none
                        self.send_response(204)
                        self.end_headers()
                    else:
                        self.send_error(404, "the live report serves / and /signature")
                except Exception as exc:  # noqa: BLE001 - one failed request, not the server
                    self.send_error(500, f"{type(exc).__name__}: {exc}"[:200])

            def _send(self, text: str, kind: str) -> None:
                data = text.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", f"{kind}; charset=utf-8")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler

    def serve(self) -> None:
        """Serve until ``close`` (or Ctrl-C in the CLI)."""
        self.server.serve_forever(poll_interval=0.2)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.folder, ignore_errors=True)
