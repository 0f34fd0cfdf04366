#!/usr/bin/env bash
# A 3-master Redis Cluster with one replica per master on 127.0.0.1:7400-7405, from the installed
# redis-server, for RedisLedgerBenchmark: `start` or `stop`. Nothing is kept on disk but the
# cluster's node files under benchmarks/target/redis-cluster.
set -euo pipefail
cd "$(dirname "$0")"
ports=(7400 7401 7402 7403 7404 7405)
case "${1:-}" in
  start)
    for p in "${ports[@]}"; do
      dir=target/redis-cluster/$p; rm -rf "$dir"; mkdir -p "$dir"
      redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout 2000 --appendonly no --save "" --dir "$dir" --logfile redis.log --daemonize yes
    done
    for p in "${ports[@]}"; do until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done; done
    redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") --cluster-replicas 1 --cluster-yes >/dev/null
    until redis-cli -p 7400 cluster info | grep -q cluster_state:ok; do sleep 0.2; done
    echo "cluster up on 127.0.0.1:7400-7405" ;;
  stop)
    for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
