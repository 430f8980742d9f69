# Shared by setup.sh and test.sh: find or install the Go toolchain go.mod asks
# for, using only Debian's packages and the Go module proxy.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO_WANT=$(awk '$1 == "go" {print $2; exit}' "$ROOT/go.mod")
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export CGO_ENABLED=0

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "sbx: installing ${missing[*]} from Debian" >&2
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
}

# go_minor prints the minor version of a go binary (21 for go1.21.3), or 0.
go_minor() {
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || true
  v=${v#go1.}
  v=${v%%[!0-9]*}
  echo "${v:-0}"
}

# ensure_go puts a Go of at least 1.21 on PATH; from 1.21 on the go command
# fetches the exact toolchain go.mod names from the module proxy by itself.
# Debian bookworm ships 1.19, so there we fetch the toolchain module once with
# it and install that into /usr/local/go.
ensure_go() {
  local g
  for g in "$(command -v go || true)" /usr/local/go/bin/go; do
    if [ -n "$g" ] && [ -x "$g" ] && [ "$(go_minor "$g")" -ge 21 ]; then
      export PATH="$(dirname "$g"):$PATH"
      return 0
    fi
  done
  apt_install golang-go ca-certificates git
  local arch tmp dir
  arch=$(dpkg --print-architecture)
  tmp=$(mktemp -d)
  echo "sbx: fetching Go $GO_WANT from the Go module proxy" >&2
  dir=$(cd "$tmp" && GOMODCACHE="$tmp/mod" GOPATH="$tmp/gopath" GOFLAGS=-mod=mod \
    /usr/lib/go/bin/go mod download -json "golang.org/toolchain@v0.0.1-go$GO_WANT.linux-$arch" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  as_root rm -rf /usr/local/go
  as_root cp -r "$dir" /usr/local/go
  as_root chmod -R u+w /usr/local/go
  as_root chmod +x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/*
  chmod -R u+w "$tmp" && rm -rf "$tmp"
  export PATH="/usr/local/go/bin:$PATH"
}

# start_postgres starts the host's PostgreSQL cluster and gives the current
# user a superuser role of the same name, so that tests reach it through its
# Unix socket (internal/testpg's default server).
start_postgres() {
  local ver me
  ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
  pg_lsclusters -h | grep -q "^$ver main" || as_root pg_createcluster "$ver" main >/dev/null
  pg_lsclusters -h | grep -q "^$ver main .* online" || as_root pg_ctlcluster "$ver" main start
  me=$(id -un)
  as_root su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname = '$me'\"" | grep -q 1 ||
    as_root su postgres -c "psql -qc 'CREATE ROLE \"$me\" SUPERUSER LOGIN'"
}

# build_sbx builds the static sbx binary into $1, carrying the agent-only
# build (cmd/sbx-agent, stripped and gzipped) that its sandboxes run: given
# to the build in place of the empty internal/agentbin/sbx-agent.gz through
# an overlay, so the tree is not written. testenv.BuildSbx runs this too.
build_sbx() {
  local tmp rc=0
  tmp=$(mktemp -d)
  (cd "$ROOT" && go build -trimpath -ldflags "-s -w" -o "$tmp/sbx-agent" ./cmd/sbx-agent &&
    gzip -9 -n <"$tmp/sbx-agent" >"$tmp/sbx-agent.gz" &&
    printf '{"Replace":{"%s":"%s"}}' "$ROOT/internal/agentbin/sbx-agent.gz" "$tmp/sbx-agent.gz" >"$tmp/overlay.json" &&
    go build -trimpath -overlay "$tmp/overlay.json" -o "$1" ./cmd/sbx) || rc=$?
  rm -rf "$tmp"
  return $rc
}

# runsc_version is the version stamp of the runsc this checkout pins: the
# gvisor.dev/gvisor module version in tools/runsc/go.mod.
runsc_version() { awk '{for (i = 1; i < NF; i++) if ($i == "gvisor.dev/gvisor") {print $(i + 1); exit}}' "$ROOT/tools/runsc/go.mod"; }

# runsc_src is the digest of tools/runsc as it is now.
runsc_src() { (cd "$ROOT/tools/runsc" && cat go.mod go.sum main.go | sha256sum | cut -c1-16); }

# runsc_built DEST: whether DEST is a runsc that reports the pinned version
# and was built from tools/runsc as it is now (the digest in DEST.src).
runsc_built() {
  [ -x "$1" ] && [ "$("$1" --version 2>/dev/null | head -n 1)" = "runsc version $(runsc_version)" ] &&
    [ "$(cat "$1.src" 2>/dev/null)" = "$(runsc_src)" ]
}

# build_runsc builds gVisor's runsc, as tools/runsc wraps it, into $1, once:
# one that runsc_built accepts is kept.
build_runsc() {
  local dest=$1 want src
  runsc_built "$dest" && return 0
  want=$(runsc_version)
  src=$(runsc_src)
  echo "sbx: building runsc $want (once; about two minutes)" >&2
  mkdir -p "$(dirname "$dest")"
  (cd "$ROOT/tools/runsc" && go build -trimpath \
    -ldflags "-X gvisor.dev/gvisor/runsc/version.version=$want" -o "$dest.tmp" .)
  mv "$dest.tmp" "$dest"
  echo "$src" >"$dest.src"
}
