#!/usr/bin/env bash
# A real single-node Kubernetes with gVisor pods, for the tests of the
# kubernetes provider (issue 24; docs/KUBERNETES.md, "The test cluster";
# docs/DESIGN.md §11 for what was measured before). Built from the Go module
# proxy and Debian's packages alone, no registry:
#
#   scripts/k8s.sh build       build and cache the binaries and the image
#   scripts/k8s.sh up DIR      start a cluster whose state is all under DIR;
#                              DIR/kubeconfig reaches it as cluster-admin
#   scripts/k8s.sh down DIR    stop it and remove all it left on the host
#   scripts/k8s.sh kubectl DIR ARGS…   the cached kubectl on DIR's cluster
#   scripts/k8s.sh leftovers DIR       print what DIR's cluster still left on
#                              the host (nothing after down; rc 1 if any)
#   scripts/k8s.sh reap PREFIX   down every cluster whose DIR starts so
#   scripts/k8s.sh built      rc 0 when build would build nothing
#   scripts/k8s.sh pack OUT BIN TAG…   pack the static binary BIN as /box
#                              into an image tarball OUT for ctr images import
#
# $SBX_K8S_KUBELET_ARGS are added to kubelet's command line. Measured on
# cgroup v1 hosts only (kubelet 1.37 needs failCgroupV1: false there).
#
# Or source it and call k8s_build, k8s_up, k8s_down. One cluster per host
# at a time: it listens on these loopback ports, chosen away from the usual
# ones (6443, 2379, 10250…) so that a Kubernetes or etcd already on the host
# and sbx's serve (7070) and tests keep theirs, and below the ephemeral range:
#   etcd 12379 (peer 12380), kube-apiserver 16443, kubelet 10350 (healthz
#   10348), kube-controller-manager 10357, kube-scheduler 10359.
# The node is named sbx-k8s-node, which /etc/hosts maps to 127.0.0.1 while
# it runs; pods get 10.88.0.0/24 on the bridge sbxk8s0 (no masquerade),
# services 10.89.0.0/24 (no kube-proxy: a service IP routes nowhere); the
# host is 10.88.0.1 on sbxk8s0, which exists from up to down. The kubelet's
# cgroups are under /sbxk8s in every cgroup v1 hierarchy. Volumes: the
# default StorageClass sbx-test provisions a PersistentVolumeClaim as a
# directory under /tmp/hostpath_pv (kube-controller-manager's in-tree
# hostpath provisioner; that path is fixed in its code).
#
# The binaries are cached by version under $SBX_K8S_CACHE (default
# /var/cache/sbx-k8s)/<Kubernetes version>: each part is rebuilt only when
# its recipe (versions, patch, sources) changed. runsc is scripts/lib.sh's
# build_runsc at bin/runsc.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_VERSION=v1.37.2
CONTAINERD_VERSION=v2.2.9
K8S_CACHE=${SBX_K8S_CACHE:-/var/cache/sbx-k8s}/$K8S_VERSION
K8S_NODE=sbx-k8s-node
K8S_HOSTS_MARK="# sbx-k8s test cluster"
K8S_PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
K8S_BOX_IMAGE=sbx.test/box:1
K8S_POD_CIDR=10.88.0.0/24
K8S_GATEWAY=10.88.0.1
K8S_SERVICE_CIDR=10.89.0.0/24
K8S_BRIDGE=sbxk8s0
K8S_CGROUP=sbxk8s
K8S_STORAGE_CLASS=sbx-test
K8S_HOSTPATH_DIR=/tmp/hostpath_pv
K8S_ETCD_PORT=12379
K8S_ETCD_PEER_PORT=12380
K8S_API_PORT=16443
K8S_KUBELET_PORT=10350
K8S_KUBELET_HEALTHZ_PORT=10348
K8S_CM_PORT=10357
K8S_SCHED_PORT=10359
K8S_PORTS="$K8S_ETCD_PORT $K8S_ETCD_PEER_PORT $K8S_API_PORT $K8S_KUBELET_PORT $K8S_KUBELET_HEALTHZ_PORT $K8S_CM_PORT $K8S_SCHED_PORT"
# What kubelet (and the CNI bridge) may change on the host; down puts back
# each that up changed, unless something else changed it since.
K8S_SYSCTLS="kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables"
K8S_KUBE_BINS="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"

k8s_log() { echo "sbx-k8s: $*" >&2; }

# k8s_recipe NAME prints what part NAME (kube, containerd, shim, image) is
# built from: a part whose stamp says so is not rebuilt.
k8s_recipe() {
  case $1 in
  kube) echo "$K8S_VERSION $K8S_KUBE_BINS" ;;
  containerd) echo "$CONTAINERD_VERSION" ;;
  shim) echo "$(runsc_version) oom-tolerated-silently" ;;
  image) echo "$(sha256sum <"$ROOT/scripts/k8sbox/main.go" | cut -c1-16) $K8S_PAUSE_IMAGE $K8S_BOX_IMAGE" ;;
  esac
}

# k8s_stamp_ok NAME: whether part NAME was built from its recipe.
k8s_stamp_ok() { [ "$(cat "$K8S_CACHE/stamps/$1" 2>/dev/null)" = "$(k8s_recipe "$1")" ]; }
k8s_stamp() { mkdir -p "$K8S_CACHE/stamps" && k8s_recipe "$1" | tr -d '\n' >"$K8S_CACHE/stamps/$1"; }

# k8s_mod_dir MODULE@VERSION prints the module's directory in the module
# cache, downloading it through the proxy.
k8s_mod_dir() {
  (cd "$K8S_CACHE" && GOFLAGS= go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

# k8s_build_kube builds the control plane, kubelet and kubectl from
# k8s.io/kubernetes in a scratch module that requires it and points each of
# its staging replaces (./staging/src/k8s.io/X) at the published k8s.io/X
# of the matching v0 version.
k8s_build_kube() {
  local src dir staging b
  k8s_stamp_ok kube && return 0
  k8s_log "building Kubernetes $K8S_VERSION ($K8S_KUBE_BINS; about 7 minutes)"
  src=$K8S_CACHE/src/kube
  rm -rf "$src" && mkdir -p "$src"
  dir=$(k8s_mod_dir "k8s.io/kubernetes@$K8S_VERSION")
  staging="v0.${K8S_VERSION#v1.}"
  {
    echo "module sbx.test/k8sbuild"
    echo
    echo "go $(awk '$1 == "go" {print $2; exit}' "$dir/go.mod")"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's|^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/src/k8s.io/.*$|\t\1 => \1 '"$staging"'|p' "$dir/go.mod"
    echo ")"
  } >"$src/go.mod"
  grep -q "=> k8s.io/api $staging" "$src/go.mod" || { k8s_log "no staging replaces found in $dir/go.mod"; return 1; }
  mkdir -p "$K8S_CACHE/bin"
  local pkgs=""
  for b in $K8S_KUBE_BINS; do pkgs="$pkgs k8s.io/kubernetes/cmd/$b"; done
  (cd "$src" && GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)" \
    -o "$K8S_CACHE/bin/" $pkgs)
  k8s_stamp kube
}

# k8s_build_containerd builds containerd, its runc shim and ctr.
k8s_build_containerd() {
  local src b
  k8s_stamp_ok containerd && return 0
  k8s_log "building containerd $CONTAINERD_VERSION (about a minute)"
  src=$K8S_CACHE/src/containerd
  rm -rf "$src" && mkdir -p "$src" "$K8S_CACHE/bin"
  (cd "$src" && go mod init sbx.test/containerdbuild >/dev/null 2>&1 &&
    GOFLAGS=-mod=mod go get "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" >/dev/null)
  (cd "$src" && GOFLAGS=-mod=mod go build -trimpath -tags "no_btrfs no_devmapper no_zfs" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
    -o "$K8S_CACHE/bin/" github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr)
  k8s_stamp containerd
}

# k8s_build_shim builds gVisor's containerd shim, containerd-shim-runsc-v1,
# at the gVisor version tools/runsc pins, with one change: it sets its
# oom_score_adj to -999 and gives up when it cannot, which root on these
# machines cannot; here a refusal is tolerated, silently: containerd reads
# the shim's stdout and stderr together as the address it answers.
k8s_build_shim() {
  local ver src dir
  ver=$(runsc_version)
  k8s_stamp_ok shim && return 0
  k8s_log "building containerd-shim-runsc-v1 (gVisor $ver)"
  src=$K8S_CACHE/src/shim
  [ -d "$src" ] && chmod -R u+w "$src"
  rm -rf "$src" && mkdir -p "$src" "$K8S_CACHE/bin"
  dir=$(k8s_mod_dir "gvisor.dev/gvisor@$ver")
  cp -r "$dir" "$src/gvisor" && chmod -R u+w "$src/gvisor"
  sed -i 's|return shim.BootstrapParams{}, fmt.Errorf("failed to set OOM Score on shim: %w", err)|_ = err /* sbx: a refusal to set the OOM Score on shim is tolerated */|' \
    "$src/gvisor/pkg/shim/v1/manager.go"
  grep -q 'OOM Score on shim is tolerated' "$src/gvisor/pkg/shim/v1/manager.go" ||
    { k8s_log "the shim's OOM score patch no longer applies"; return 1; }
  printf 'module sbx.test/shimbuild\n\ngo %s\n\nrequire gvisor.dev/gvisor %s\n\nreplace gvisor.dev/gvisor => ./gvisor\n' \
    "$(awk '$1 == "go" {print $2; exit}' "$dir/go.mod")" "$ver" >"$src/go.mod"
  (cd "$src" && GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$K8S_CACHE/bin/containerd-shim-runsc-v1" gvisor.dev/gvisor/shim)
  k8s_stamp shim
}

# k8s_pack_image OUT BIN TAG… packs BIN as /box and /pause (entrypoint
# /pause) into a docker-archive tarball tagged TAG…, for ctr images import.
k8s_pack_image() {
  local out=$1 bin=$2 tmp lsha csha tags="" t
  shift 2
  tmp=$(mktemp -d)
  mkdir -p "$tmp/root/etc" "$tmp/root/tmp" "$tmp/root/proc" "$tmp/root/sys" "$tmp/root/dev"
  cp "$bin" "$tmp/root/box" && ln -s box "$tmp/root/pause"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp/root" -cf "$tmp/layer.tar" .
  lsha=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  mkdir "$tmp/$lsha" && mv "$tmp/layer.tar" "$tmp/$lsha/layer.tar"
  printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/pause"],"Env":["PATH=/"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$(go env GOARCH)" "$lsha" >"$tmp/config.json"
  csha=$(sha256sum "$tmp/config.json" | cut -d' ' -f1)
  mv "$tmp/config.json" "$tmp/$csha.json"
  for t in "$@"; do tags="$tags${tags:+,}\"$t\""; done
  printf '[{"Config":"%s.json","RepoTags":[%s],"Layers":["%s/layer.tar"]}]' "$csha" "$tags" "$lsha" >"$tmp/manifest.json"
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp" -cf "$out.tmp" manifest.json "$csha.json" "$lsha/layer.tar"
  mv "$out.tmp" "$out"
  rm -rf "$tmp"
}

# k8s_build_image builds scripts/k8sbox and packs it as the pause image and
# sbx.test/box:1 (one image, two tags) into $K8S_CACHE/images/box.tar.
k8s_build_image() {
  k8s_stamp_ok image && return 0
  mkdir -p "$K8S_CACHE/images" "$K8S_CACHE/bin"
  (cd "$ROOT" && go build -trimpath -ldflags "-s -w" -o "$K8S_CACHE/bin/box" scripts/k8sbox/main.go)
  k8s_pack_image "$K8S_CACHE/images/box.tar" "$K8S_CACHE/bin/box" "$K8S_PAUSE_IMAGE" "$K8S_BOX_IMAGE"
  k8s_stamp image
}

k8s_packages() { apt_install etcd-server containernetworking-plugins iptables openssl curl util-linux iproute2; }

# k8s_build builds (or finds in the cache) everything up needs.
k8s_build() {
  ensure_go
  k8s_packages
  mkdir -p "$K8S_CACHE"
  build_runsc "$ROOT/bin/runsc"
  k8s_build_image
  k8s_build_shim
  k8s_build_containerd
  k8s_build_kube
}

# k8s_built: whether build would build nothing (every part built from its
# recipe as it is now, and bin/runsc too).
k8s_built() {
  local p
  for p in kube containerd shim image; do k8s_stamp_ok $p || return 1; done
  runsc_built "$ROOT/bin/runsc"
}

# k8s_start DIR NAME CMD…: runs CMD in a session of its own, its output in
# DIR/logs/NAME.log, its PID in DIR/run/NAME.pid. CMD inherits the caller's
# other open files, on purpose: a shell that brings a cluster up under the
# host's lock (flock /run/sbx/k8s.lock scripts/k8s.sh up DIR) leaves the
# lock held by the cluster's daemons until down kills them, so that the
# tests' own clusters wait for it. (scripts/test.sh closes its lock's
# descriptor for up instead: a killed run's cluster is then reaped by the
# next holder of the lock.)
k8s_start() {
  local dir=$1 name=$2
  shift 2
  setsid "$@" </dev/null >"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/run/$name.pid"
  disown $! # no job notice when down kills it
}

# k8s_wait DIR NAME WHAT SECONDS CMD…: until CMD succeeds, at most SECONDS,
# and while the process DIR/run/NAME.pid names lives.
k8s_wait() {
  local dir=$1 name=$2 what=$3 deadline=$((SECONDS + $4))
  shift 4
  until "$@" >/dev/null 2>&1; do
    if ! k8s_alive "$dir" "$name"; then
      k8s_log "$name ended while waiting for $what: $(tail -n 3 "$dir/logs/$name.log")"
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      k8s_log "timed out waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

# k8s_running PID: whether PID runs (a zombie does not: up's shell is gone,
# and whoever inherited its children may reap them seconds later).
k8s_running() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

k8s_alive() { local p; p=$(cat "$1/run/$2.pid" 2>/dev/null) && k8s_running "$p"; }

k8s_untainted() { [ -z "$(k8s_kubectl "$1" get node "$K8S_NODE" -o 'jsonpath={.spec.taints}')" ]; }

k8s_kubectl() {
  local dir=$1
  shift
  "$K8S_CACHE/bin/kubectl" --kubeconfig "$dir/kubeconfig" --cache-dir "$dir/kubectl-cache" "$@"
}

# k8s_pki DIR: a CA, the API server's certificate, one client certificate
# (system:masters) that every component and the kubeconfig use, and the
# service-account signing key pair, all under DIR/pki.
k8s_pki() {
  local p=$1/pki
  mkdir -p "$p"
  (
    cd "$p"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
      -days 7 -subj /CN=sbx-k8s-ca 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout apiserver.key -out apiserver.csr \
      -subj /CN=kube-apiserver 2>/dev/null
    printf 'subjectAltName=DNS:localhost,DNS:%s,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:%s\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' \
      "$K8S_NODE" "${K8S_SERVICE_CIDR%.0/24}.1" >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 -extfile apiserver.ext \
      -out apiserver.crt 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout admin.key -out admin.csr \
      -subj "/O=system:masters/CN=sbx-k8s-admin" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n' >admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 -extfile admin.ext \
      -out admin.crt 2>/dev/null
    openssl ecparam -name prime256v1 -genkey -noout -out sa.ec 2>/dev/null
    openssl pkcs8 -topk8 -nocrypt -in sa.ec -out sa.key
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
    chmod 600 ./*.key
  )
  cat >"$1/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sbx-k8s
  cluster:
    server: https://127.0.0.1:$K8S_API_PORT
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: sbx-k8s-admin
  user:
    client-certificate-data: $(base64 -w0 "$p/admin.crt")
    client-key-data: $(base64 -w0 "$p/admin.key")
contexts:
- name: sbx-k8s
  context:
    cluster: sbx-k8s
    user: sbx-k8s-admin
current-context: sbx-k8s
EOF
  chmod 600 "$1/kubeconfig"
}

k8s_sysctls() {
  local k v
  for k in $K8S_SYSCTLS; do
    v=$(sysctl -n "$k" 2>/dev/null) && printf '%s=%s\n' "$k" "$(echo $v)"
  done
  return 0
}

k8s_kube_chains() {
  local ipt t
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for t in filter nat mangle; do
      $ipt -w -t $t -S 2>/dev/null | awk -v ipt=$ipt -v t=$t '$1 == "-N" && $2 ~ /^KUBE-/ {print ipt, t, $2}'
    done
  done
  return 0
}

# k8s_up DIR starts the cluster; a bring-up that fails tears down what it
# started (a trap) and returns non-zero.
k8s_up() {
  local dir t0=$SECONDS rc=0
  mkdir -p "$1"
  dir=$(cd "$1" && pwd)
  [ "$(id -u)" = 0 ] || { k8s_log "the test cluster needs root"; return 1; }
  k8s_built || { k8s_log "not built: run scripts/k8s.sh build first"; return 1; }
  if [ -e "$dir/run/up" ]; then
    k8s_log "$dir holds a cluster already (down it first)"
    return 1
  fi
  # A cluster whose API server died (a crash; the daemons outlive the shell
  # or test that started them) is torn down; a live one is refused.
  local old
  for old in $(grep -F "$K8S_HOSTS_MARK" /etc/hosts | awk '{print $NF}'); do
    if k8s_alive "$old" kube-apiserver; then
      k8s_log "a test cluster is up on this host already, in $old; down it first"
      return 1
    fi
    k8s_log "tearing down what a stopped test cluster left in $old"
    k8s_down "$old"
  done
  local port
  for port in $K8S_PORTS; do
    if ss -Htln "sport = :$port" | grep -q .; then
      k8s_log "port $port is taken: is another test cluster up?"
      return 1
    fi
  done
  # Not "( … ) || rc=$?": errexit does not work inside such a subshell.
  set +e
  (
    set -e
    trap 'exit 130' INT TERM
    trap 'c=$?; if [ $c != 0 ]; then k8s_log "bring-up failed; tearing down (logs in $dir/logs)"; k8s_down "$dir"; fi' EXIT
    k8s_up_steps "$dir"
  )
  rc=$?
  set -e
  [ $rc = 0 ] && k8s_log "up in $((SECONDS - t0)) s: export KUBECONFIG=$dir/kubeconfig"
  return $rc
}

k8s_up_steps() {
  local dir=$1 bin=$K8S_CACHE/bin t0=$SECONDS c
  mkdir -p "$dir"/{logs,run,etcd,containerd,kubelet,pod-logs,runsc,cni/net.d,cni/ipam}
  touch "$dir/run/up"
  ln -sfn "$bin" "$dir/bin"
  # What up may create on the host outside DIR, so that down removes each
  # only if up made it.
  for c in /var/lib/kubelet /var/log/containers /var/log/pods /etc/kubernetes "$K8S_HOSTPATH_DIR"; do
    [ -e "$c" ] || echo "$c" >>"$dir/run/created"
  done
  # containerd's shims put their sockets in /run/containerd/s whatever the
  # configuration says; that directory may be another containerd's too.
  for c in /run/containerd /run/containerd/s; do
    [ -e "$c" ] || echo "$c" >>"$dir/run/created-dirs"
  done
  ls /run/containerd/s 2>/dev/null >"$dir/run/shim-sockets.before" || true
  k8s_sysctls >"$dir/run/sysctl.before"
  k8s_kube_chains >"$dir/run/chains.before"
  printf '127.0.0.1 %s %s %s\n' "$K8S_NODE" "$K8S_HOSTS_MARK" "$dir" >>/etc/hosts

  k8s_pki "$dir"
  local pki=$dir/pki curlc="curl -fsS --cacert $dir/pki/ca.crt --cert $dir/pki/admin.crt --key $dir/pki/admin.key"

  k8s_start "$dir" etcd etcd --name sbx-k8s --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
    --initial-cluster "sbx-k8s=http://127.0.0.1:$K8S_ETCD_PEER_PORT" --unsafe-no-fsync --snapshot-count 10000

  # containerd, with runc (the default) and gVisor (handler runsc).
  cat >"$dir/runsc.toml" <<EOF
binary_name = "$ROOT/bin/runsc"
root = "$dir/runsc"
[runsc_config]
  platform = "systrap"
EOF
  cat >"$dir/containerd.toml" <<EOF
version = 3
root = "$dir/containerd/root"
state = "$dir/containerd/state"
temp = "$dir/containerd/tmp"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$dir/containerd/containerd.sock"
[ttrpc]
  address = "$dir/containerd/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$dir/containerd/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "$K8S_PAUSE_IMAGE"
  [plugins."io.containerd.cri.v1.runtime"]
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "$dir/runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runsc]
        runtime_type = "io.containerd.runsc.v1"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runsc.options]
          TypeUrl = "io.containerd.runsc.v1.options"
          ConfigPath = "$dir/runsc.toml"
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "$dir/cni/net.d"
      max_conf_num = 1
EOF
  cat >"$dir/cni/net.d/10-sbxk8s.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sbxk8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$K8S_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$dir/cni/ipam",
        "ranges": [[{"subnet": "$K8S_POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOF
  # The bridge is made here rather than by the CNI plugin at the first pod
  # (which takes it as it is: a bridge, its gateway address), so that the
  # host's 10.88.0.1 exists from up to down: a server on the host that pods
  # reach there (the tests' PostgreSQL) can be checked before any pod runs.
  ip link show "$K8S_BRIDGE" >/dev/null 2>&1 || ip link add "$K8S_BRIDGE" type bridge
  ip addr replace "$K8S_GATEWAY/${K8S_POD_CIDR#*/}" dev "$K8S_BRIDGE"
  ip link set "$K8S_BRIDGE" up
  PATH="$bin:$PATH" k8s_start "$dir" containerd "$bin/containerd" --config "$dir/containerd.toml"
  k8s_wait "$dir" containerd containerd 30 "$bin/ctr" --address "$dir/containerd/containerd.sock" version
  "$bin/ctr" --address "$dir/containerd/containerd.sock" -n k8s.io images import "$K8S_CACHE/images/box.tar" >"$dir/logs/ctr-import.log" 2>&1 ||
    { k8s_log "ctr images import: $(tail -n 3 "$dir/logs/ctr-import.log")"; return 1; }

  k8s_wait "$dir" etcd etcd 30 curl -fsS "http://127.0.0.1:$K8S_ETCD_PORT/health"
  k8s_start "$dir" kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$K8S_ETCD_PORT" --bind-address 127.0.0.1 --secure-port "$K8S_API_PORT" \
    --endpoint-reconciler-type none --service-cluster-ip-range "$K8S_SERVICE_CIDR" \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --authorization-mode RBAC --allow-privileged \
    --kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
    --kubelet-preferred-address-types Hostname --profiling=false
  k8s_wait "$dir" kube-apiserver kube-apiserver 60 $curlc "https://127.0.0.1:$K8S_API_PORT/readyz"

  k8s_start "$dir" kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$K8S_CM_PORT" --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=false --allocate-node-cidrs=false --cluster-name sbx-k8s --profiling=false \
    --enable-hostpath-provisioner
  k8s_start "$dir" kube-scheduler "$bin/kube-scheduler" --kubeconfig "$dir/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$K8S_SCHED_PORT" --leader-elect=false --profiling=false

  # kubelet's cgroups live under /sbxk8s, which it wants to exist.
  local h
  for h in /sys/fs/cgroup/*/; do
    case $h in */unified/) continue ;; esac
    mkdir -p "$h$K8S_CGROUP"
    if [ -e "$h$K8S_CGROUP/cpuset.cpus" ]; then
      cat "${h}cpuset.cpus" >"$h$K8S_CGROUP/cpuset.cpus"
      cat "${h}cpuset.mems" >"$h$K8S_CGROUP/cpuset.mems"
    fi
  done
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$K8S_CGROUP
containerRuntimeEndpoint: unix://$dir/containerd/containerd.sock
address: 127.0.0.1
port: $K8S_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $K8S_KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: AlwaysAllow}
failSwapOn: false
makeIPTablesUtilChains: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
podLogsDir: $dir/pod-logs
serializeImagePulls: false
registerNode: true
EOF
  k8s_start "$dir" kubelet "$bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubeconfig" \
    --root-dir "$dir/kubelet" --cert-dir "$dir/kubelet/pki" --hostname-override "$K8S_NODE" ${SBX_K8S_KUBELET_ARGS:-}
  k8s_wait "$dir" kubelet "node $K8S_NODE to register" 60 k8s_kubectl "$dir" get node "$K8S_NODE"
  k8s_kubectl "$dir" wait --for=condition=Ready "node/$K8S_NODE" --timeout=90s >/dev/null
  # The node lifecycle controller takes off the not-ready taint a few
  # seconds after Ready; until then a pod stays Pending.
  k8s_wait "$dir" kube-controller-manager "the node's taints to go" 60 k8s_untainted "$dir"
  k8s_kubectl "$dir" apply -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
---
# PersistentVolumeClaims get a directory under /tmp/hostpath_pv, made by
# kube-controller-manager's hostpath provisioner and removed with the claim.
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $K8S_STORAGE_CLASS
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
EOF
  # A pod can be made once its namespace has the default service account,
  # and starts once the API server's CA is published there (its token's
  # volume waits for it).
  k8s_wait "$dir" kube-controller-manager "the default service account" 60 k8s_kubectl "$dir" get serviceaccount default -n default
  k8s_wait "$dir" kube-controller-manager "the kube-root-ca.crt config map" 60 k8s_kubectl "$dir" get configmap kube-root-ca.crt -n default
  k8s_sysctls >"$dir/run/sysctl.after"
  k8s_log "node $K8S_NODE Ready $((SECONDS - t0)) s after the start"
}

# k8s_stop DIR NAME [SIGNAL]: SIGNAL (default SIGTERM), then SIGKILL after
# 10 s.
k8s_stop() {
  local pid i
  pid=$(cat "$1/run/$2.pid" 2>/dev/null) || return 0
  if k8s_running "$pid"; then
    kill -"${3:-TERM}" "$pid" 2>/dev/null || true
    for i in $(seq 100); do k8s_running "$pid" || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 50); do k8s_running "$pid" || break; sleep 0.1; done
  fi
  rm -f "$1/run/$2.pid"
}

# k8s_dir_procs DIR: the PIDs of the processes whose command line names DIR
# (containerd's shims and gVisor's sandboxes and gofers) or that live in the
# kubelet's cgroups.
k8s_dir_procs() {
  local p exe
  {
    for p in /proc/[0-9]*; do
      exe=$(readlink "$p/exe" 2>/dev/null) || continue
      case ${exe##*/} in bash | sh | dash | grep | tr | awk | sed | sort | cat | find) continue ;; esac
      if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$1/"; then echo "${p#/proc/}"; fi
    done
    find /sys/fs/cgroup/*/"$K8S_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null
  } | sort -un
}

# k8s_down DIR stops the cluster in DIR and removes everything it left on
# the host; it is safe to run again, and on a cluster that never came up.
k8s_down() {
  local dir bin=$K8S_CACHE/bin sock ns pid i k v before after now line ipt t c
  dir=$1
  [ -d "$dir" ] && dir=$(cd "$dir" && pwd)
  sock=$dir/containerd/containerd.sock
  set +e
  # Pods first, through Kubernetes, so that the runtime and CNI undo theirs.
  if k8s_alive "$dir" kubelet && k8s_alive "$dir" kube-apiserver; then
    k8s_kubectl "$dir" delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1
    # kubelet stops the pods' containers and sandboxes (whose network
    # namespaces CRI then removes) at once; it removes them only later.
    for i in $(seq 40); do
      if [ -z "$("$bin/ctr" --address "$sock" -n k8s.io tasks ls -q 2>/dev/null)" ] &&
        ! awk -v d="$dir/containerd/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | grep -q /netns/; then
        break
      fi
      sleep 0.5
    done
  fi
  k8s_stop "$dir" kubelet
  # What is left in containerd, killed and deleted through its shims.
  if k8s_alive "$dir" containerd; then
    for c in $("$bin/ctr" --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      "$bin/ctr" --address "$sock" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1
    done
    sleep 0.5
    for c in $("$bin/ctr" --address "$sock" -n k8s.io containers ls -q 2>/dev/null); do
      "$bin/ctr" --address "$sock" -n k8s.io tasks delete -f "$c" >/dev/null 2>&1
      "$bin/ctr" --address "$sock" -n k8s.io containers delete "$c" >/dev/null 2>&1
    done
  fi
  # The control plane and etcd keep nothing worth a graceful stop (each
  # takes 2-3 s); containerd is asked, as it has shims to let go of.
  for c in kube-scheduler kube-controller-manager kube-apiserver; do k8s_stop "$dir" "$c" KILL; done
  k8s_stop "$dir" containerd
  k8s_stop "$dir" etcd KILL
  # Shims, sandboxes and gofers that outlived containerd.
  for i in 1 2 3; do
    pids=$(k8s_dir_procs "$dir")
    [ -z "$pids" ] && break
    for pid in $pids; do kill -KILL "$pid" 2>/dev/null; done
    sleep 0.5
  done
  # Mounts under DIR (network namespaces, rootfs, volumes), deepest first.
  for i in 1 2 3; do
    awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r line; do
      umount -l "$line" 2>/dev/null
    done
  done
  # The kubelet's cgroups, deepest first.
  for c in /sys/fs/cgroup/*/"$K8S_CGROUP"; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  ip link del "$K8S_BRIDGE" 2>/dev/null
  # iptables chains the kubelet added, and the rules that jump to them.
  if [ -f "$dir/run/chains.before" ]; then
    local chains
    chains=$(k8s_kube_chains | grep -vxF -f "$dir/run/chains.before")
    echo "$chains" | while read -r ipt t c; do
      [ -n "$c" ] || continue
      $ipt -w -t "$t" -S | awk -v c="$c" '$1 == "-A" && $0 ~ (" -j " c "( |$)") {print}' | while read -r line; do
        eval "$ipt -w -t $t -D ${line#-A }" 2>/dev/null
      done
      $ipt -w -t "$t" -F "$c" 2>/dev/null
    done
    echo "$chains" | while read -r ipt t c; do [ -n "$c" ] && $ipt -w -t "$t" -X "$c" 2>/dev/null; done
  fi
  # sysctls up changed and nothing changed since.
  if [ -f "$dir/run/sysctl.before" ]; then
    [ -f "$dir/run/sysctl.after" ] || k8s_sysctls >"$dir/run/sysctl.after"
    while IFS== read -r k before; do
      after=$(sed -n "s/^$k=//p" "$dir/run/sysctl.after")
      now=$(echo $(sysctl -n "$k" 2>/dev/null))
      if [ "$before" != "$after" ] && [ "$now" = "$after" ]; then
        sysctl -qw "$k=$before" 2>/dev/null
      fi
    done <"$dir/run/sysctl.before"
  fi
  # /etc/hosts is rewritten in place: it may be a bind mount.
  if grep -qF "$K8S_HOSTS_MARK $dir" /etc/hosts; then
    grep -vF "$K8S_HOSTS_MARK $dir" /etc/hosts >"$dir/run/hosts"
    cat "$dir/run/hosts" >/etc/hosts
  fi
  # Paths outside DIR that up created.
  if [ -f "$dir/run/created" ]; then
    while read -r c; do rm -rf "$c"; done <"$dir/run/created"
  fi
  find /var/log/containers -maxdepth 1 -type l -lname "$dir/*" -delete 2>/dev/null
  # Shim sockets made since up that nothing listens on any more.
  if [ -f "$dir/run/shim-sockets.before" ] && [ -d /run/containerd/s ]; then
    local listening
    listening=$(ss -xlH 2>/dev/null | awk '{print $5}')
    for c in /run/containerd/s/*; do
      [ -S "$c" ] || continue
      grep -qxF "${c##*/}" "$dir/run/shim-sockets.before" && continue
      echo "$listening" | grep -qxF "$c" || rm -f "$c"
    done
  fi
  if [ -f "$dir/run/created-dirs" ]; then
    sort -r "$dir/run/created-dirs" | while read -r c; do rmdir "$c" 2>/dev/null; done
  fi
  rm -f "$dir/run/up" "$dir/run/created" "$dir/run/created-dirs" "$dir/run/shim-sockets.before" "$dir/run/sysctl.before" "$dir/run/sysctl.after" "$dir/run/chains.before"
  set -e
  return 0
}

# k8s_reap PREFIX tears down every test cluster on this host whose
# directory starts with PREFIX, and removes the directory: what a test
# binary that was killed left running (internal/k8stest calls it once it
# holds the host's test-cluster lock, so no live test owns such a cluster).
k8s_reap() {
  local d
  for d in $(grep -F "$K8S_HOSTS_MARK" /etc/hosts | awk '{print $NF}'); do
    case $d in "$1"*) ;; *) continue ;; esac
    k8s_log "tearing down the test cluster a killed test left in $d"
    k8s_down "$d"
    rm -rf "$d"
  done
}

# k8s_leftovers DIR prints what of the cluster in DIR is still on the host
# (nothing once down succeeded); it returns non-zero when something is.
k8s_leftovers() {
  local dir=$1 out listening s port
  [ -d "$dir" ] && dir=$(cd "$dir" && pwd)
  out=$(
    k8s_dir_procs "$dir" | sed 's/^/process /'
    for n in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet containerd; do
      k8s_alive "$dir" $n && echo "process $n"
    done
    awk -v d="$dir/" 'index($5, d) == 1 {print "mount " $5}' /proc/self/mountinfo
    ls -d /sys/fs/cgroup/*/"$K8S_CGROUP" 2>/dev/null | sed 's/^/cgroup /'
    ip -br link show "$K8S_BRIDGE" 2>/dev/null | sed 's/^/link /'
    k8s_kube_chains | sed 's/^/iptables /'
    grep -F "$K8S_HOSTS_MARK" /etc/hosts | sed 's/^/hosts /'
    for port in $K8S_PORTS; do ss -Htln "sport = :$port" | grep -q . && echo "listening :$port"; done
    ls -d "$dir/runsc"/*/* "$dir/runc"/*/* 2>/dev/null | grep -v '/null-netns$' | sed 's/^/container state /'
    listening=$(ss -xlH 2>/dev/null | awk '{print $5}')
    for s in /run/containerd/s/*; do
      [ -S "$s" ] && ! echo "$listening" | grep -qxF "$s" && echo "dead shim socket $s"
    done
    for s in /var/lib/kubelet /var/log/pods /var/log/containers /etc/kubernetes "$K8S_HOSTPATH_DIR"; do [ -e "$s" ] && echo "path $s"; done
    true
  )
  [ -z "$out" ] && return 0
  echo "$out"
  return 1
}

# k8s_main is the command line. It is called on the file's last line, so
# that bash has read the whole file before it runs anything long (an edit
# to the file during a build would otherwise break the run).
k8s_main() {
  case ${1:-} in
  build) k8s_build ;;
  up) [ $# = 2 ] || { echo "usage: $0 up DIR" >&2; exit 2; }; ensure_go; k8s_packages; k8s_up "$2" ;;
  down) [ $# = 2 ] || { echo "usage: $0 down DIR" >&2; exit 2; }; k8s_down "$2" ;;
  reap) [ $# = 2 ] || { echo "usage: $0 reap DIR-PREFIX" >&2; exit 2; }; k8s_reap "$2" ;;
  built) k8s_built || { k8s_log "not built (or out of date): run scripts/k8s.sh build"; exit 1; } ;;
  pack) [ $# -ge 4 ] || { echo "usage: $0 pack OUT BIN TAG…" >&2; exit 2; }; shift; ensure_go; k8s_pack_image "$@" ;;
  leftovers) [ $# = 2 ] || { echo "usage: $0 leftovers DIR" >&2; exit 2; }; k8s_leftovers "$2" ;;
  kubectl) [ $# -ge 2 ] || { echo "usage: $0 kubectl DIR ARGS…" >&2; exit 2; }; local d=$2; shift 2; k8s_kubectl "$d" "$@" ;;
  *) echo "usage: $0 build | built | up DIR | down DIR | reap PREFIX | leftovers DIR | kubectl DIR ARGS… | pack OUT BIN TAG…" >&2; exit 2 ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then k8s_main "$@"; exit; fi
