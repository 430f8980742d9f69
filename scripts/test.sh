#!/usr/bin/env bash
# Runs every test of sbx: gofmt, go mod tidy, vet, the unit and end-to-end
# tests, the Kubernetes tests on a test cluster, and the fuzz seed corpora.
# Installs what the tests need first. With CI=true, tests that would skip for
# a missing prerequisite fail instead.
source "$(dirname "$0")/lib.sh"
ensure_go
# The last line's packages are the test Kubernetes cluster's (scripts/k8s.sh).
apt_install debootstrap nftables iproute2 e2fsprogs mount runc postgresql openssh-client curl chromium novnc python3-ipykernel python3-matplotlib python3-httpx python3-websockets nodejs docker.io \
  etcd-server containernetworking-plugins iptables openssl util-linux
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

# What would be left on the host when this script ends, however it ends
# (short of SIGKILL): the cluster build if it still runs, the test cluster
# if it is up. The script's exit status stays its own.
k8s_build_pid="" k8s_build_log="" k8s_dir=""
cleanup() {
  local rc=$?
  if [ -n "$k8s_build_pid" ]; then kill -- -"$k8s_build_pid" 2>/dev/null || true; fi
  if [ -n "$k8s_build_log" ]; then rm -f "$k8s_build_log"; fi
  if [ -n "$k8s_dir" ]; then
    bash scripts/k8s.sh down "$k8s_dir" 9>&- && rm -rf "$k8s_dir"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The test cluster's binaries (scripts/k8s.sh build: about 7 minutes on a
# fresh machine, 0.3 s once cached) build in the background, in a session
# of their own (so that cleanup stops all of it), while npm and go vet run.
# The cluster needs root (its cache is /var/cache/sbx-k8s); as another user
# the Kubernetes tests skip, as the other tests that need root do.
k8s_stage=false
[ "$(id -u)" = 0 ] && k8s_stage=true
if $k8s_stage; then
  k8s_build_log=$(mktemp)
  setsid bash scripts/k8s.sh build >"$k8s_build_log" 2>&1 &
  k8s_build_pid=$!
fi

# The unmodified E2B SDKs that e2e TestE2BSDKLocal drives, OpenSandbox's
# that TestOpenSandboxSDKLocal drives, and the TypeScript SDK's compiler and
# test dependencies, as their lockfiles pin them.
for dir in e2e/e2b e2e/opensandbox sdk/typescript; do
  npm ci --prefix "$ROOT/$dir" --no-audit --no-fund --loglevel=error
done
export SBX_RUNSC="$ROOT/bin/runsc"
go vet ./...

if $k8s_stage; then
  k8s_build_rc=0
  wait "$k8s_build_pid" || k8s_build_rc=$?
  k8s_build_pid=""
  if [ $k8s_build_rc != 0 ]; then
    cat "$k8s_build_log" >&2
    echo "scripts/k8s.sh build failed (rc $k8s_build_rc)" >&2
    exit 1
  fi
fi

# The Kubernetes tests' stage: one test cluster for the whole run, shared
# by every package's tests ($SBX_TEST_K8S_DIR; internal/k8stest), so that
# they run alongside each other and the rest, not one package's binary after
# another's. A host runs one such cluster at a time: the lock that
# internal/k8stest's own clusters take is held until this script ends (fd 9,
# which no child keeps: a process that outlived this script must not hold
# it). The cluster's directory is named as k8stest names its own, so that a
# cluster this script left up when killed is torn down by the next holder
# of the lock (scripts/k8s.sh reap), here or in a test.
if $k8s_stage; then
  mkdir -p /run/sbx
  exec 9>/run/sbx/k8s.lock
  flock -n 9 || { echo "sbx: waiting for the test cluster's lock (/run/sbx/k8s.lock): another cluster is up" >&2; flock 9; }
  bash scripts/k8s.sh reap "${TMPDIR:-/tmp}/sbx-k8s-" 9>&-
  k8s_dir=$(mktemp -d "${TMPDIR:-/tmp}/sbx-k8s-XXXXXXXX")
  bash scripts/k8s.sh up "$k8s_dir" 9>&-
  export SBX_TEST_K8S_DIR="$k8s_dir"
fi

go test -count=1 -timeout 40m ./... "$@" 9>&-
