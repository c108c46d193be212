# Sourced by the Quick start scripts and CI: puts Node 24 and pnpm first on PATH (installing them from the npm
# registry into .tools/ when the machine's Node is older), then installs dependencies and builds the workspace.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ -x "$TOOLS/bin/node" ]; then export PATH="$TOOLS/bin:$PATH"; fi
if [ "$(node_major)" -lt 24 ]; then
  echo "bootstrap: Node $(node -v 2>/dev/null || echo none) is older than 24; installing node@24 into .tools/" >&2
  npm install -g --prefix "$TOOLS" --no-audit --no-fund node@24 >&2
  export PATH="$TOOLS/bin:$PATH"
fi
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm -v 2>/dev/null | cut -d. -f1)" -lt 10 ]; then
  echo "bootstrap: installing pnpm@10 into .tools/" >&2
  npm install -g --prefix "$TOOLS" --no-audit --no-fund pnpm@10 >&2
  export PATH="$TOOLS/bin:$PATH"
fi
hash -r
echo "bootstrap: node $(node -v), pnpm $(pnpm -v)" >&2
cd "$ROOT"
pnpm install --frozen-lockfile --prefer-offline >&2
pnpm build >&2
