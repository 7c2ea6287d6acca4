#!/usr/bin/env bash
# Runs every test of the workspace, installing first what the tests need and this
# machine lacks. Used as is by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

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
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== tests (unit, property, golden vectors, CLI end to end)"
cargo test --workspace --locked
