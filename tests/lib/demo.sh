#!/usr/bin/env bash
# tests/lib/demo.sh - `make demo`: the main job end to end.  For now it
# builds the tools and shows them; issue 8 makes it boot a VM with the tools
# image and profile PostgreSQL in it.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
"$BUILD/vmtools-image" --version
"$BUILD/vmtools-agent" --version
