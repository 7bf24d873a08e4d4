#!/usr/bin/env bash
# Fails when modules inside shared/src or functions/lambda-common/src import
# each other in a loop (scripts/test.sh runs it), printing each cycle with the
# files in it and the names each one takes from the next.
#
# The tool is tools/module-cycles, a workspace binary that reads the module
# tree with `syn` (mod declarations from lib.rs, `use` items and
# crate::/super::/self:: paths; #[cfg(test)] modules left out; see its
# src/main.rs for exactly what counts as an import). It needs nothing
# installed: cargo builds it with the workspace (syn is already in
# Cargo.lock), in seconds.
#
# Why not cargo-modules (`cargo modules dependencies --lib -p shared
# --acyclic`), the first candidate, which reads the graph through
# rust-analyzer? Measured here (2 cores, shared with other builds):
# - its current release, 0.28.0, needs rustc 1.98 (this toolchain is 1.95);
# - `cargo install --locked cargo-modules --version 0.27.0` compiled 229
#   crates, rust-analyzer's among them: 15 min 07 s of wall time under load,
#   617 s user + 25 s system CPU (so at best ~5.5 min on 2 idle cores, more
#   in practice: the ra_ap_* crates build one after another), 1.3 GB of
#   memory; that is over the 6-minute budget and would take CI from ~21 to
#   ~27-36 minutes on a fresh machine;
# - its `--acyclic` checks the graph of items, not of modules: on shared,
#   even with --no-fns --no-types --no-traits --no-owns --no-externs
#   --no-sysroot, it stopped (after 147 s of analysis) at the first "cycle"
#   between a type and its own method (RegionsSection <->
#   RegionsSection::validate) and lists no module cycle.
# So it is not installed by scripts/install-deps.sh; this syn reader is the
# fallback, kept honest by its own tests (cargo test -p module-cycles),
# which seed cycles (siblings, and through a parent's `pub use` facade).
#
#   scripts/check-module-cycles.sh            shared/src and functions/lambda-common/src
#   scripts/check-module-cycles.sh DIR...     other crates' src directories
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then
  set -- shared/src functions/lambda-common/src
fi
exec cargo run --quiet -p module-cycles -- "$@"
