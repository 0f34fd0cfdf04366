#!/usr/bin/env bash
# Redis Clusters of 1, 2 and 3 masters, each master with one replica, from the installed
# redis-server, for RedisLedgerBenchmark (its targets cluster-1, cluster-2, cluster-3):
#   1 master:  127.0.0.1:7410 (replica 7411)
#   2 masters: 127.0.0.1:7420-7421 (replicas 7422-7423)
#   3 masters: 127.0.0.1:7400-7402 (replicas 7403-7405)
# `start` or `stop`. Nothing is kept on disk but the node files under benchmarks/target/redis-cluster.
# The slots are assigned by hand (CLUSTER ADDSLOTSRANGE, MEET, REPLICATE): `redis-cli --cluster
# create` refuses fewer than three masters.
set -euo pipefail
cd "$(dirname "$0")"

# cluster MASTERS BASE_PORT: masters on BASE..BASE+MASTERS-1, their replicas on the next MASTERS ports.
cluster() {
  local masters=$1 base=$2 nodes=$(( $1 * 2 )) p i
  for (( p = base; p < base + nodes; p++ )); do
    local dir=target/redis-cluster/$p; rm -rf "$dir"; mkdir -p "$dir"
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout 2000 --appendonly no --save "" --dir "$dir" --logfile redis.log --daemonize yes
  done
  for (( p = base; p < base + nodes; p++ )); do until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done; done
  local per=$(( 16384 / masters ))
  for (( i = 0; i < masters; i++ )); do
    local first=$(( i * per )) last=$(( i == masters - 1 ? 16383 : (i + 1) * per - 1 ))
    redis-cli -p $(( base + i )) cluster addslotsrange "$first" "$last" >/dev/null
  done
  for (( p = base + 1; p < base + nodes; p++ )); do redis-cli -p "$p" cluster meet 127.0.0.1 "$base" >/dev/null; done
  for (( p = base; p < base + nodes; p++ )); do
    until [ "$(redis-cli -p "$p" cluster nodes | wc -l)" -eq "$nodes" ]; do sleep 0.1; done
  done
  for (( i = 0; i < masters; i++ )); do
    local id; id=$(redis-cli -p $(( base + i )) cluster myid)
    until redis-cli -p $(( base + masters + i )) cluster replicate "$id" 2>/dev/null | grep -q OK; do sleep 0.2; done
  done
  for (( p = base; p < base + nodes; p++ )); do
    until redis-cli -p "$p" cluster info | grep -q cluster_state:ok; do sleep 0.2; done
  done
  echo "cluster of $masters master(s) up on 127.0.0.1:$base-$(( base + nodes - 1 ))"
}

all_ports() { echo 7410 7411 7420 7421 7422 7423 7400 7401 7402 7403 7404 7405; }

case "${1:-}" in
  start)
    cluster 1 7410
    cluster 2 7420
    cluster 3 7400 ;;
  stop)
    for p in $(all_ports); do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
