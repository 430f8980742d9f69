#!/usr/bin/env bash
# Sets up and starts sbx on a fresh Debian machine: installs what it needs,
# builds the static binary into /usr/local/bin/sbx and gVisor's runsc into the
# data dir, and runs `sbx serve` in the foreground (data in /var/lib/sbx, API
# on 127.0.0.1:7070).
# As root it runs as it is (a fresh Debian may have no sudo); otherwise it
# runs itself again through sudo.
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "sbx: run this as root (there is no sudo here)" >&2; exit 1; }
  exec sudo -E "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
ensure_go
apt_install debootstrap nftables iproute2 e2fsprogs mount novnc
data_dir=${SBX_DATA_DIR:-/var/lib/sbx}
install -d -m 0700 "$data_dir"
build_runsc "$data_dir/bin/runsc"
tmp=$(mktemp -d)
build_sbx "$tmp/sbx"
install -m 0755 "$tmp/sbx" /usr/local/bin/sbx
rm -rf "$tmp"
echo "sbx: installed /usr/local/bin/sbx; starting sbx serve (Ctrl-C stops it)" >&2
exec /usr/local/bin/sbx serve --data-dir "$data_dir" "$@"
