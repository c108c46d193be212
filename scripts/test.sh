#!/usr/bin/env bash
# Runs the whole test suite. Redis: REDIS_URL when set, otherwise the tests start their own redis-server.
# Then, when that passed and no file arguments were given, the cluster pass: the e2e files of vitest.cluster.config.ts
# again with the product on a Redis Cluster of its own (3 primaries, 3 replicas; needs redis-server and redis-cli).
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"
pnpm exec vitest run "$@"
if [ "$#" -eq 0 ] && ! { command -v redis-server && command -v redis-cli; } >/dev/null 2>&1; then
  echo "test.sh: the cluster pass is skipped: it starts a Redis Cluster of its own and needs redis-server and redis-cli" >&2
elif [ "$#" -eq 0 ]; then
  echo "test.sh: the cluster pass (AGENTLOOP_TEST_CLUSTER=1, vitest.cluster.config.ts)" >&2
  AGENTLOOP_TEST_CLUSTER=1 exec pnpm exec vitest run --config vitest.cluster.config.ts
fi
