#!/usr/bin/env bash
# Start a throwaway PostgreSQL server, run the given command against it, then remove it.
# The server listens on 127.0.0.1 on a free port; its files live in a temporary folder.
set -euo pipefail

PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
if [ ! -x "$PG_BIN/initdb" ]; then
  echo "with-postgres: no PostgreSQL server binaries found (set PG_BIN); 'make test' installs Debian's postgresql" >&2
  exit 1
fi

work="$(mktemp -d /tmp/faithlab-pg.XXXXXX)"
chmod 755 "$work"
run_as=()
if [ "$(id -u)" = "0" ]; then
  # initdb refuses to run as root: run the server as the postgres user (or nobody).
  pg_user="$(id -u postgres >/dev/null 2>&1 && echo postgres || echo nobody)"
  chown "$pg_user" "$work"
  run_as=(runuser -u "$pg_user" --)
fi

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
cleanup() {
  "${run_as[@]}" "$PG_BIN/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"${run_as[@]}" "$PG_BIN/initdb" -D "$work/data" -U faithlab --auth=trust -E UTF8 --locale=C.UTF-8 >"$work/initdb.log" 2>&1 \
  || { cat "$work/initdb.log" >&2; exit 1; }
"${run_as[@]}" "$PG_BIN/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $work -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
  start >/dev/null
"$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U faithlab faithlab

export DATABASE_URL="postgres://faithlab@127.0.0.1:$port/faithlab"
echo "with-postgres: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
"$@"
