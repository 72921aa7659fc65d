#!/usr/bin/env bash
# The main job on a bundled example: install, build, then show what fuserule sees in a ResNet block.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
fuserule=${BUILD_DIR:-build}/cli/fuserule
set -x
"$fuserule" stats examples/resnet_block.graph
"$fuserule" fmt examples/resnet_block.graph
