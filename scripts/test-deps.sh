#!/usr/bin/env bash
# Installs everything the test suite needs; idempotent and quiet when done.
# Debian packages listed in .ci/packages.txt, the llama-server engine, the
# Node client packages for the SDK tests, and the Go modules.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
mapfile -t pkgs < <(grep -v '^\s*#' .ci/packages.txt | sed 's/\s//g' | grep -v '^$' | sort -u)
pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm may come from elsewhere than Debian; only install them if absent.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | grep -v '^$' || true)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "test-deps: installing Debian packages: ${missing[*]}" >&2
  $SUDO apt-get update -qq >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

engine=$(bash scripts/install-llama-server.sh)
echo "test-deps: llama-server at $engine" >&2

if [ ! -d test/node/node_modules/openai ]; then
  echo "test-deps: installing the Node client packages" >&2
  (cd test/node && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

go mod download
