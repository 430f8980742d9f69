#!/usr/bin/env bash
# Fetches the console's vendored libraries from the npm registry, at the
# versions and integrity pinned below, into ui/static/vendor/, and writes
# ui/static/vendor/SHA256SUMS, which ui's tests check the embedded files
# against. Only a change of version here should change those files.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST="$ROOT/ui/static/vendor"
# package@version  npm integrity  files kept (relative to the package)
PACKAGES=(
  "@xterm/xterm@6.0.0 sha512-TQwDdQGtwwDt+2cgKDLn0IRaSxYu1tSUjgKarSDkUM0ZNiSRXFpjxEsvc/Zgc5kq5omJ+V0a8/kIM2WD3sMOYg== xterm lib/xterm.mjs css/xterm.css LICENSE"
  "@xterm/addon-fit@0.11.0 sha512-jYcgT6xtVYhnhgxh3QgYDnnNMYTcf8ElbxxFzX0IZo+vabQqSPAjC3c1wJrKB5E19VwQei89QCiZZP86DCPF7g== xterm-addon-fit lib/addon-fit.mjs LICENSE"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$DEST"
mkdir -p "$DEST"
for p in "${PACKAGES[@]}"; do
  read -r spec integrity dir files <<<"$p"
  (cd "$tmp" && npm pack --silent "$spec" >pack.out)
  tgz="$tmp/$(tail -n1 "$tmp/pack.out")"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "vendor-ui: $spec has integrity $got, pinned $integrity" >&2
    exit 1
  fi
  mkdir -p "$tmp/x" "$DEST/$dir"
  tar -xzf "$tgz" -C "$tmp/x"
  for f in $files; do
    cp "$tmp/x/package/$f" "$DEST/$dir/$(basename "$f")"
  done
  echo "$spec" >"$DEST/$dir/VERSION"
  rm -rf "$tmp/x" "$tgz"
done
(cd "$DEST" && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum) >"$DEST/SHA256SUMS"
