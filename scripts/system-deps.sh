#!/usr/bin/env bash
# Install what the test suite needs from Debian (PostgreSQL server, Chromium) when it is
# missing and we may: as root, with apt-get. Otherwise say what is missing.
set -euo pipefail
need=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "system-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "system-deps: missing ${need[*]}; install them (Debian: sudo apt-get install ${need[*]})" >&2
  exit 1
fi
