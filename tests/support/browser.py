"""Headless Chromium through chromedriver's W3C WebDriver HTTP API: load a page, read its console.

Plain urllib, so the suite needs no Selenium; Debian's chromium and chromium-driver
packages provide the two binaries (.ci/run installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def binaries() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def require_binaries() -> tuple[str, str]:
    """Both binaries, or skip; on CI their absence is a failure, not a skip."""
    found = binaries()
    if found is None:
        message = "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


class HeadlessChromium:
    def __init__(self, browser: str, driver: str):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.profile = tempfile.mkdtemp(prefix="zk2kafka-chromium-")
        self.driver = subprocess.Popen([driver, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                self._call("GET", "/status")
                break
            except OSError:
                if time.monotonic() > deadline or self.driver.poll() is not None:
                    self.close()
                    raise
                time.sleep(0.1)
        options = {"binary": browser, "args": [*CHROMIUM_ARGS, f"--user-data-dir={self.profile}"]}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options, "goog:loggingPrefs": {"browser": "ALL"}}}}
        )["sessionId"]

    def load(self, page: Path) -> list[dict]:
        """Open the page and return what it logged to the console (CSP violations included)."""
        self._call("POST", f"/session/{self.session}/url", {"url": page.resolve().as_uri()})
        return self._call("POST", f"/session/{self.session}/se/log", {"type": "browser"})

    def evaluate(self, script: str):
        return self._call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": []})

    def close(self) -> None:
        try:
            if getattr(self, "session", None):
                self._call("DELETE", f"/session/{self.session}")
        finally:
            self.driver.terminate()
            self.driver.wait(10)
            shutil.rmtree(self.profile, ignore_errors=True)

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())["value"]
