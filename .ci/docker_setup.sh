#!/usr/bin/env bash
# Idempotent Docker setup for the SWE-bench tests on machines that cannot pull images:
#   1. install docker.io + debootstrap when missing (apt),
#   2. start dockerd without bridge networking or iptables (containers run with network "none"),
#   3. build the local base image ratchet-swe-base (Debian bookworm minbase + python3, pytest, git)
#      from the Debian mirror apt already uses, and import it; skipped when the image exists.
# Environment knobs: RATCHET_SWE_BASE_IMAGE (image name), DOCKERD_LOG (daemon log path),
# DOCKERD_STORAGE_DRIVER (e.g. vfs where overlay2 is unavailable), DEBIAN_MIRROR.
set -euo pipefail

IMAGE="${RATCHET_SWE_BASE_IMAGE:-ratchet-swe-base}"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/ratchet-dockerd.log}"
# The Debian mirror apt is already configured with (deb822 .sources or one-line sources.list).
apt_mirror() {
  # Either file may be missing: no match is not an error here (pipefail and set -e are on).
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources || true
    grep -hs '^deb ' /etc/apt/sources.list || true; } \
    | awk '{print $2}' | grep '/debian/*$' | head -n 1 || true
}
MIRROR="${DEBIAN_MIRROR:-$(apt_mirror)}"
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi

log() { echo "[docker_setup] $*" >&2; }

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  log "installing docker.io and debootstrap"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q docker.io debootstrap
fi

if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (log: $DOCKERD_LOG)"
  extra=()
  if [ -n "${DOCKERD_STORAGE_DRIVER:-}" ]; then extra+=(--storage-driver "$DOCKERD_STORAGE_DRIVER"); fi
  # --bridge=none/--iptables=false: no network setup is possible (or wanted) on CI machines.
  # setsid: the daemon outlives the shell (and process group) that started it.
  $SUDO sh -c "setsid nohup dockerd --bridge=none --iptables=false ${extra[*]:-} >>'$DOCKERD_LOG' 2>&1 &"
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then break; fi
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    log "dockerd did not come up within 60 s; last log lines:"
    tail -n 30 "$DOCKERD_LOG" >&2 || true
    exit 1
  fi
fi
log "daemon up: $(docker info --format '{{.ServerVersion}} storage={{.Driver}}')"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "image $IMAGE exists; nothing to build"
  exit 0
fi

if [ -z "$MIRROR" ]; then
  log "no Debian mirror found in apt's sources; set DEBIAN_MIRROR to one"
  exit 1
fi
rootfs="$(mktemp -d /tmp/ratchet-swe-rootfs.XXXXXX)"
trap '$SUDO rm -rf "$rootfs"' EXIT
log "debootstrap bookworm minbase into $rootfs (mirror $MIRROR)"
$SUDO debootstrap --variant=minbase --include=python3,python3-pytest,git,patch \
  bookworm "$rootfs" "$MIRROR" >&2
# Trim apt caches and docs so the imported image stays small.
$SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
$SUDO tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' - "$IMAGE" >/dev/null
log "built $IMAGE: $(docker image inspect "$IMAGE" --format '{{.Size}}') bytes"
