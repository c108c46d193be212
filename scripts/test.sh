#!/usr/bin/env bash
# Runs the whole test suite. Redis: REDIS_URL when set, otherwise the tests start their own redis-server.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"
exec pnpm exec vitest run "$@"
