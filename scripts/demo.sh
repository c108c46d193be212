#!/usr/bin/env bash
# The demo end to end: Redis (started if none answers), the mock model, `agentloop serve` as its own process,
# and a multi-iteration agent run whose streamed events are printed as they arrive.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"
exec node packages/e2e/dist/demo.js "$@"
