#!/usr/bin/env bash
# Makes a working llama-server available and prints its path on stdout.
# Idempotent; the unpacked engine is cached outside the repository in
# ${RAYGW_ENGINE_CACHE:-/var/cache/raygw/engine}.
#
# Order: $RAY_LLAMA_CPP_BINARY_PATH if set; a llama-server on PATH; the
# distribution's llama.cpp-tools package when its archive has one; else the
# Debian unstable packages unpacked into the cache with a private apt state
# (for Debian bookworm, which has no llama.cpp package), run through their own
# dynamic loader by a wrapper script.
set -euo pipefail

log() { printf 'install-llama-server: %s\n' "$*" >&2; }
works() { "$1" --version >/dev/null 2>&1; }

cache=${RAYGW_ENGINE_CACHE:-/var/cache/raygw/engine}
wrapper="$cache/bin/llama-server"

if [ -n "${RAY_LLAMA_CPP_BINARY_PATH:-}" ] && [ -x "$RAY_LLAMA_CPP_BINARY_PATH" ] && works "$RAY_LLAMA_CPP_BINARY_PATH"; then
  echo "$RAY_LLAMA_CPP_BINARY_PATH"; exit 0
fi
if p=$(command -v llama-server 2>/dev/null) && works "$p"; then
  echo "$p"; exit 0
fi
if [ -x "$wrapper" ] && works "$wrapper"; then
  echo "$wrapper"; exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# The distribution's own package, where its archive carries one.
if apt-cache show llama.cpp-tools >/dev/null 2>&1 || { $SUDO apt-get update -qq >/dev/null 2>&1 && apt-cache show llama.cpp-tools >/dev/null 2>&1; }; then
  log "installing the distribution's llama.cpp-tools package"
  if $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llama.cpp-tools >/dev/null; then
    if p=$(command -v llama-server) && works "$p"; then echo "$p"; exit 0; fi
  fi
fi

# Fallback: unpack Debian unstable's packages into the cache.
mirror=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  mirror=$(awk '/^URIs:/{for(i=2;i<=NF;i++) if ($i !~ /security/) {print $i; exit}}' "$f")
  [ -n "$mirror" ] && break
done
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '$1=="deb" && $0 !~ /security/ {for(i=2;i<=NF;i++) if ($i ~ /^(https?|file):/) {print $i; exit}}' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || { log "no Debian mirror found in the apt sources"; exit 1; }
log "unpacking the engine packages from the unstable suite into $cache"

work="$cache/apt"
root="$cache/root"
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs" "$cache/bin"
echo "deb [trusted=yes] $mirror sid main" > "$work/sources.list"
aptopts=(-o "Dir::State::Lists=$work/lists" -o "Dir::Etc::SourceList=$work/sources.list"
  -o Dir::Etc::SourceParts=/nonexistent -o "Dir::Cache=$work" -o "Dir::Cache::archives=$work/archives"
  -o APT::Sandbox::User=root -o Debug::NoLocking=1)
apt-get "${aptopts[@]}" -qq update >&2
rm -f "$work/debs"/*.deb
(cd "$work/debs" && apt-get "${aptopts[@]}" -qq download \
  llama.cpp-tools libllama0 libggml0 libc6 libgcc-s1 libgomp1 libstdc++6 libssl3t64 >&2)
rm -rf "$root.new" && mkdir -p "$root.new"
for d in "$work/debs"/*.deb; do dpkg -x "$d" "$root.new"; done
L="$root.new/usr/lib/x86_64-linux-gnu"
[ -x "$L/ld-linux-x86-64.so.2" ] || { log "unsupported architecture: only x86-64 is handled by the fallback"; exit 1; }
# ggml scores the CPU backends it finds beside the loader's libraries.
for so in "$L"/ggml/backends0/*.so; do ln -sf "ggml/backends0/$(basename "$so")" "$L/$(basename "$so")"; done
rm -rf "$root" && mv "$root.new" "$root"

for tool in llama-server llama-bench llama-quantize; do
  cat > "$cache/bin/$tool.new" <<WRAP
#!/bin/sh
L="$root/usr/lib/x86_64-linux-gnu"
exec "\$L/ld-linux-x86-64.so.2" --library-path "\$L:\$L/llama:\$L/ggml" "$root/usr/bin/$tool" "\$@"
WRAP
  chmod 0755 "$cache/bin/$tool.new"
  mv "$cache/bin/$tool.new" "$cache/bin/$tool"
done

if ! works "$wrapper"; then
  log "the unpacked llama-server does not start"; "$wrapper" --version >&2 || true; exit 1
fi
log "$("$wrapper" --version 2>&1 | head -1)"
echo "$wrapper"
