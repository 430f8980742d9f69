#!/usr/bin/env bash
# Sets up and starts sbx on a fresh Debian machine: installs what it needs,
# builds the static binary into /usr/local/bin/sbx and runs `sbx serve` in
# the foreground (data in /var/lib/sbx, API on 127.0.0.1:7070).
source "$(dirname "$0")/lib.sh"
ensure_go
tmp=$(mktemp -d)
build_sbx "$tmp/sbx"
as_root install -m 0755 "$tmp/sbx" /usr/local/bin/sbx
rm -rf "$tmp"
echo "sbx: installed /usr/local/bin/sbx; starting sbx serve (Ctrl-C stops it)" >&2
if [ "$(id -u)" = 0 ]; then exec /usr/local/bin/sbx serve "$@"; else exec sudo /usr/local/bin/sbx serve "$@"; fi
