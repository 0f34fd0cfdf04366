#!/usr/bin/env bash
# Before/after in one run: builds the ledger benchmark at a base revision and at the working tree,
# then runs the two jars alternately (base, head, head, base, ...) so that drift on the machine
# falls on both alike, and prints each case's median ids/s side by side with the ratio head/base.
#
#   benchmarks/compare-revisions.sh <base-revision> [--pairs=N] [benchmark options...]
#
# Benchmark options are passed to both jars (see docs/benchmarks.md); --rounds is fixed at 1 per
# invocation and --pairs (default 3) says how many base/head pairs run. Default cases: the Sumi
# single-id and batch cases next to the raw insert.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: benchmarks/compare-revisions.sh <base-revision> [--pairs=N] [benchmark options...]}
shift
pairs=3
args=()
cases="--cases=raw,sumi-tx,sumi-tx-exec,sumi-lease,sumi-lease-exec,sumi-batch-100"
for arg in "$@"; do
  case "$arg" in
    --pairs=*) pairs=${arg#--pairs=} ;;
    --cases=*) cases=$arg ;;
    --rounds=*) echo "--rounds is fixed at 1 per invocation; use --pairs" >&2; exit 2 ;;
    *) args+=("$arg") ;;
  esac
done

out=benchmarks/target/compare
src=$out/base-src
rm -rf "$out"; mkdir -p "$out"
git worktree remove --force "$src" 2>/dev/null || true
git worktree add --detach -q "$src" "$base"
trap 'git worktree remove --force "$src" 2>/dev/null || true' EXIT

echo "[compare] building base $(git rev-parse --short "$base") and head (working tree)"
(cd "$src" && ./mvnw -B -q -pl benchmarks -am package -DskipTests)
cp "$src/benchmarks/target/sumi-benchmarks.jar" "$out/base.jar"
./mvnw -B -q -pl benchmarks -am package -DskipTests
cp benchmarks/target/sumi-benchmarks.jar "$out/head.jar"

run() { # which, pair
  java -jar "$out/$1.jar" ledger --rounds=1 "$cases" --csv="$out/$1-$2.csv" "${args[@]}" > "$out/$1-$2.log"
  echo "[compare] pair $2: $1 done"
}
for p in $(seq 1 "$pairs"); do
  if (( p % 2 )); then run base "$p"; run head "$p"; else run head "$p"; run base "$p"; fi
done

# Median over the pairs of each case's ids/s (disturbed rounds included: the log says which).
for which in base head; do
  tail -q -n +2 "$out"/$which-*.csv | awk -F, -v w=$which '{ print w "," $1 "," $4 }'
done | sort -t, -k1,1 -k2,2 -k3,3g | awk -F, '
  { key = $2; v[$1 SUBSEP key, ++n[$1 SUBSEP key]] = $3; cases[key] = 1 }
  function median(w, k,   c) { c = n[w SUBSEP k]; if (c == 0) return 0;
    return c % 2 ? v[w SUBSEP k, (c + 1) / 2] : (v[w SUBSEP k, c / 2] + v[w SUBSEP k, c / 2 + 1]) / 2 }
  END {
    printf "%-18s %12s %12s %10s\n", "case", "base ids/s", "head ids/s", "head/base"
    for (k in cases) { b = median("base", k); h = median("head", k)
      printf "%-18s %12.0f %12.0f %10.3f\n", k, b, h, (b > 0 ? h / b : 0) }
  }' | (read -r header; echo "$header"; sort)
grep -h DISTURBED "$out"/*.log | grep -v "is DISTURBED" || true
