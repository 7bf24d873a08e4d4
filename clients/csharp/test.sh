#!/usr/bin/env bash
# Builds the C# SDK with Mono's mcs and runs its NUnit 2.6 suite against
# real local stacks started from the mm-local binary:
#   MM_LOCAL_BIN=/path/to/mm-local clients/csharp/test.sh
# (without MM_LOCAL_BIN it builds one with cargo). Needs
# `scripts/install-deps.sh redis sdk csharp` (Mono, NUnit 2.6, and the
# TypeScript SDK's node_modules, whose `yaml` package the generator's
# drift check reads the specs with).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"
if [ -z "${MM_LOCAL_BIN:-}" ]; then
  (cd "$repo" && cargo build --quiet -p local-stack --bin mm-local)
  target_dir="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
  MM_LOCAL_BIN="$target_dir/debug/mm-local"
fi
export MM_LOCAL_BIN MM_REPO="$repo"
nunit_framework="$(ls /usr/lib/cli/nunit.framework-2.6*/nunit.framework.dll | head -1)"
build="$here/build"
rm -rf "$build" && mkdir -p "$build"

echo "-- mcs: the library (Runtime/, C# 7.2, .NET Standard 2.0 API only)"
mcs -target:library -langversion:7.2 -warnaserror+ -nowarn:1591 -debug \
  -r:System.Net.Http.dll -out:"$build/Matchmaking.Client.dll" -recurse:'Runtime/*.cs'

echo "-- mcs: the Unity sample against stand-in UnityEngine types"
mcs -target:library -langversion:7.2 -out:"$build/UnityEngine.dll" 'Tests~/UnityStubs/UnityEngine.cs'
mcs -target:library -langversion:7.2 -warnaserror+ -r:System.Net.Http.dll -r:"$build/UnityEngine.dll" -r:"$build/Matchmaking.Client.dll" \
  -out:"$build/Matchmaking.Samples.dll" -recurse:'Samples~/*.cs'

echo "-- mcs: the tests"
mcs -target:library -langversion:7.2 -debug -r:System.Net.Http.dll -r:"$build/Matchmaking.Client.dll" \
  -r:"$nunit_framework" -out:"$build/Matchmaking.Client.Tests.dll" -recurse:'Tests~/*Tests.cs' -recurse:'Tests~/Support/*.cs'

echo "-- nunit-console (against local stacks from $MM_LOCAL_BIN)"
cd "$build"
nunit-console -nologo -noshadow -labels Matchmaking.Client.Tests.dll "$@"
