#!/usr/bin/env bash
# Install bubblewrap >= 0.8 (the MBPP+ sandbox needs --disable-userns and --size), as root.
# Debian 12 / Ubuntu 24.04 ship a recent enough package; older releases (Ubuntu 22.04: 0.6.1)
# get the upstream release built from source.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -y -qq && apt-get install -y -qq bubblewrap
# The help text is read whole before it is searched: `bwrap --help | grep -q` under pipefail fails
# at random, when grep exits on the first match while bwrap still writes (SIGPIPE, status 141).
ok() {
  local help
  help=$(bwrap --help 2>&1) || true
  grep -q -- --disable-userns <<<"$help" && grep -q -- '--size' <<<"$help"
}
if ! ok; then
  apt-get install -y -qq meson ninja-build pkg-config libcap-dev curl xz-utils
  work=$(mktemp -d)
  curl -fsSL https://github.com/containers/bubblewrap/releases/download/v0.11.0/bubblewrap-0.11.0.tar.xz \
    | tar -xJ -C "$work"
  (cd "$work/bubblewrap-0.11.0" && meson setup _build --prefix=/usr -Dman=disabled -Dtests=false \
     && ninja -C _build install)
  rm -rf "$work"
  hash -r
fi
ok || { echo "bubblewrap >= 0.8 could not be installed" >&2; exit 1; }
# The sandbox needs unprivileged user namespaces (on by default on Debian 11+ and Ubuntu).
[ "$(cat /proc/sys/user/max_user_namespaces)" -gt 0 ] || sysctl -w user.max_user_namespaces=15000
if [ -e /proc/sys/kernel/unprivileged_userns_clone ]; then sysctl -w kernel.unprivileged_userns_clone=1; fi
bwrap --version
