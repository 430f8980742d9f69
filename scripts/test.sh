#!/usr/bin/env bash
# Runs every test of sbx: gofmt, go mod tidy, vet, the unit and end-to-end
# tests, and the fuzz seed corpora. Installs what the tests need first. With
# CI=true, tests that would skip for a missing prerequisite fail instead.
source "$(dirname "$0")/lib.sh"
ensure_go
apt_install debootstrap nftables iproute2 e2fsprogs mount runc postgresql openssh-client curl chromium novnc python3-ipykernel python3-matplotlib python3-httpx python3-websockets nodejs docker.io
command -v npm >/dev/null || apt_install npm # Debian's nodejs leaves npm apart; NodeSource's carries it
start_postgres
cd "$ROOT"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
if ! go mod tidy -diff; then
  echo "go.mod and go.sum are not tidy: run go mod tidy" >&2
  exit 1
fi
build_runsc "$ROOT/bin/runsc"
# The unmodified E2B SDKs that e2e TestE2BSDKLocal drives, OpenSandbox's
# that TestOpenSandboxSDKLocal drives, and the TypeScript SDK's compiler and
# test dependencies, as their lockfiles pin them.
for dir in e2e/e2b e2e/opensandbox sdk/typescript; do
  npm ci --prefix "$ROOT/$dir" --no-audit --no-fund --loglevel=error
done
export SBX_RUNSC="$ROOT/bin/runsc"
go vet ./...
go test -count=1 -timeout 40m ./... "$@"
