#!/usr/bin/env bash
# Headless Chromium and its WebDriver for tests/report's browser test (Selenium drives the
# system browser; nothing is downloaded at test time), as root (Debian's packages chromium and
# chromium-driver). Fails loudly when either is missing, so the test never skips under CI.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -y -qq && apt-get install -y -qq chromium chromium-driver
for tool in chromium chromedriver; do
  command -v "$tool" >/dev/null || { echo "$tool missing after apt-get install" >&2; exit 1; }
done
chromium --headless=new --no-sandbox --disable-gpu --dump-dom about:blank >/dev/null 2>&1 \
  || { echo "headless chromium does not start" >&2; exit 1; }
chromedriver --version
