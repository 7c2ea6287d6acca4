#!/usr/bin/env bash
# Runs every test of the workspace, installing first what the tests need and this
# machine lacks. Used as is by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

# Debian packages the build and tests need, as "command:package" pairs; a missing
# command gets its package installed with apt-get (as root, or through sudo).
missing=()
need_debian() {
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
}

# Every Rust build links with the C toolchain; the engine's generated Verilog is
# linted, compiled and co-simulated with Verilator (which needs make and a C++ compiler).
need_debian cc:build-essential make:make verilator:verilator
# The live service's end-to-end test shapes traffic with HTB between two network
# namespaces (iproute2) and measures it with iperf3.
need_debian ip:iproute2 tc:iproute2 iperf3:iperf3
# Its exposure tests check /metrics with Prometheus's promtool, talk TLS with curl to a
# certificate openssl makes, and mount a tmpfs to fill a disk.
need_debian promtool:prometheus curl:curl openssl:openssl mount:mount
# The controller (the `cluster` feature) keeps its pool in etcd: its tests start a real
# etcd and read it with etcdctl; the etcd client's build compiles etcd's protocol with
# protoc, whose imports of Google's own types (descriptor.proto...) Debian ships apart,
# in libprotobuf-dev.
need_debian etcd:etcd-server etcdctl:etcd-client protoc:protobuf-compiler
[ -f /usr/include/google/protobuf/descriptor.proto ] || missing+=(libprotobuf-dev)
# The report's plots (fairshare compare) draw their text with a TrueType font.
if [ -z "${FAIRSHARE_FONT:-}" ] && ! find /usr/share/fonts -iname '*.ttf' -print -quit 2>/dev/null | grep -q .; then
  missing+=(fonts-dejavu-core)
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "test.sh: installing ${missing[*]} with apt-get"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Rust components the checks use (rustup installs them when missing).
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    echo "test.sh: installing the Rust component $component"
    rustup component add "$component"
  fi
done

echo "== formatting"
cargo fmt --all -- --check

echo "== lints"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

echo "== tests (unit, property, golden vectors, CLI end to end)"
cargo test --workspace --all-features --locked
