#!/usr/bin/env bash
# A private PostgreSQL cluster with wal_level = logical, for CdcBenchmark (docs/benchmarks-outbox.md,
# "CDC dispatch against polling"): the machine's shared server on 5432 runs wal_level = replica, so
# the outbox's CDC path cannot stream from it, and restarting it would disconnect everyone.
#   `start`  initdb + pg_ctl start from the newest /usr/lib/postgresql/<v>/bin (or SUMI_BENCH_PG_BIN),
#            as the postgres user when run as root, trust authentication, on 127.0.0.1:5440
#            (SUMI_BENCH_PG_PORT), data in /tmp/sumi-bench-logical-pg (SUMI_BENCH_PG_DIR; not under
#            target/, which a `mvn clean` elsewhere would delete under a running server). A fresh
#            cluster each time: whatever the directory held is removed first.
#   `stop`   pg_ctl stop -m fast, then the directory is removed.
#   `status` pg_ctl status.
# Settings: the shared server's (shared_buffers 128MB, fsync on, synchronous_commit on, autovacuum off,
# max_connections 100, max_wal_size 1GB), plus wal_level = logical, max_replication_slots and
# max_wal_senders 10, and pg_stat_statements preloaded (the benchmark counts the idle phases' queries
# with it). The benchmark runs both paths, CDC and polling, on this cluster.
set -euo pipefail

PORT=${SUMI_BENCH_PG_PORT:-5440}
DIR=${SUMI_BENCH_PG_DIR:-/tmp/sumi-bench-logical-pg}
DATA=$DIR/data
if [ -n "${SUMI_BENCH_PG_BIN:-}" ]; then
  BIN=$SUMI_BENCH_PG_BIN
else
  BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
  echo "no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/<v>/bin; set SUMI_BENCH_PG_BIN" >&2
  exit 1
fi

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

running() {
  [ -f "$DATA/PG_VERSION" ] && as_postgres "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

case "${1:-}" in
  start)
    if running; then
      echo "already running: jdbc:postgresql://127.0.0.1:$PORT/postgres (data $DATA)"
      exit 0
    fi
    rm -rf "$DIR"
    mkdir -p "$DIR"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$DIR"; fi
    as_postgres "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 >"$DIR/initdb.log" 2>&1
    cat >>"$DATA/postgresql.conf" <<EOF

# logical-postgres.sh (Sumi's CdcBenchmark)
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
max_connections = 100
shared_buffers = 128MB
fsync = on
synchronous_commit = on
autovacuum = off
max_wal_size = 1GB
min_wal_size = 80MB
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
TimeZone = 'Etc/UTC'
EOF
    as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 start >/dev/null
    echo "PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') with wal_level=logical up:" \
      "jdbc:postgresql://127.0.0.1:$PORT/postgres (user postgres, trust; data $DATA, log $DIR/server.log)"
    ;;
  stop)
    if [ -f "$DATA/PG_VERSION" ]; then
      as_postgres "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
    echo "stopped (removed $DIR)"
    ;;
  status)
    if running; then echo "running on 127.0.0.1:$PORT (data $DATA)"; else echo "not running"; exit 3; fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
