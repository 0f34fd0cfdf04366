#!/usr/bin/env bash
# Before/after in one run: builds the ledger benchmark at a base revision and at the working tree,
# then runs the two jars alternately (base, head, head, base, ...) so that drift on the machine
# falls on both alike, and prints each case's median ids/s side by side with the ratio head/base,
# the min-max and median of the per-pair ratios (the noise), and each pair's ratio.
#
#   benchmarks/compare-revisions.sh <base-revision> [--pairs=N] [--reuse-jars] [benchmark options...]
#
# Benchmark options are passed to both jars (see docs/benchmarks.md); --rounds is fixed at 1 per
# invocation and --pairs (default 3) says how many base/head pairs run. --reuse-jars skips the
# two builds when benchmarks/target/compare holds jars built from the same base and working tree
# (a second run on the same machine). Default cases: the Sumi single-id and batch cases next to
# the raw insert.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: benchmarks/compare-revisions.sh <base-revision> [--pairs=N] [benchmark options...]}
shift
pairs=3
reuse=false
args=()
cases="--cases=raw,sumi-tx,sumi-tx-exec,sumi-lease,sumi-lease-exec,sumi-batch-100"
for arg in "$@"; do
  case "$arg" in
    --pairs=*) pairs=${arg#--pairs=} ;;
    --reuse-jars) reuse=true ;;
    --cases=*) cases=$arg ;;
    --rounds=*) echo "--rounds is fixed at 1 per invocation; use --pairs" >&2; exit 2 ;;
    *) args+=("$arg") ;;
  esac
done

out=benchmarks/target/compare
src=$out/base-src
# What the jars were built from: the base commit, and the head commit plus a digest of the
# uncommitted changes (this script and docs/ left out: they are not in the jar).
stamp="base=$(git rev-parse "$base^{commit}") head=$(git rev-parse HEAD) dirty=$(git diff HEAD -- . ':(exclude)docs' ':(exclude)benchmarks/compare-revisions.sh' | sha1sum | cut -c1-12)"
if [[ $reuse == true && -f $out/base.jar && -f $out/head.jar && "$(cat "$out/stamp" 2>/dev/null)" == "$stamp" ]]; then
  echo "[compare] reusing the jars of $out ($stamp)"
  rm -f "$out"/*.csv "$out"/*.log
else
  [[ $reuse == true ]] && echo "[compare] --reuse-jars: no jars built from this base and working tree; building"
  rm -rf "$out"; mkdir -p "$out"
  git worktree remove --force "$src" 2>/dev/null || true
  git worktree add --detach -q "$src" "$base"
  trap 'git worktree remove --force "$src" 2>/dev/null || true' EXIT

  echo "[compare] building base $(git rev-parse --short "$base") and head (working tree)"
  (cd "$src" && ./mvnw -B -q -pl benchmarks -am package -DskipTests)
  cp "$src/benchmarks/target/sumi-benchmarks.jar" "$out/base.jar"
  ./mvnw -B -q -pl benchmarks -am package -DskipTests
  cp benchmarks/target/sumi-benchmarks.jar "$out/head.jar"
  echo "$stamp" > "$out/stamp"
  git worktree remove --force "$src" 2>/dev/null || true
fi

run() { # which, pair
  echo "[compare] pair $2: $1 starts, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  java -jar "$out/$1.jar" ledger --rounds=1 "$cases" --csv="$out/$1-$2.csv" "${args[@]}" > "$out/$1-$2.log"
}
for p in $(seq 1 "$pairs"); do
  if (( p % 2 )); then run base "$p"; run head "$p"; else run head "$p"; run base "$p"; fi
done
echo "[compare] done, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# Per case: the median over the pairs of each side's ids/s and their ratio; then the ratio of
# each pair (head/base of the two runs next to each other in time), whose spread is the noise:
# a difference inside the pairs' min-max is not one this run can tell from the machine's drift.
# pg us: the median CPU per id of the PostgreSQL processes serving the run (less sensitive to
# other load than ids/s). Disturbed rounds are included (the log says which).
for p in $(seq 1 "$pairs"); do
  for which in base head; do
    tail -n +2 "$out/$which-$p.csv" | awk -F, -v w=$which -v p=$p '{ print w "," p "," $1 "," $4 "," $6 "," $7 }'
  done
done | awk -F, -v pairs="$pairs" '
  function median(a, c,   i, j, t, s) { if (c == 0) return 0
    for (i = 1; i <= c; i++) s[i] = a[i]
    for (i = 2; i <= c; i++) { t = s[i]; for (j = i - 1; j >= 1 && s[j] > t; j--) s[j + 1] = s[j]; s[j + 1] = t }
    return c % 2 ? s[(c + 1) / 2] : (s[c / 2] + s[c / 2 + 1]) / 2 }
  { rate[$1, $3, $2] = $4; pg[$1, $3, $2] = $5; other[$1, $3, $2] = $6
    if (!($3 in seen)) { seen[$3] = 1; order[++ncases] = $3 } }
  END {
    printf "%-18s %10s %10s %9s %15s %9s %8s %8s %8s\n", "case", "base ids/s", "head ids/s", "head/base",
      "pairs min-max", "pairs med", "base pg", "head pg", "pg h/b"
    for (i = 1; i <= ncases; i++) { k = order[i]; nb = nh = nr = 0
      delete b; delete h; delete r; delete bp; delete hp
      for (p = 1; p <= pairs; p++) {
        if ((("base", k, p) in rate)) { b[++nb] = rate["base", k, p]; bp[nb] = pg["base", k, p] }
        if ((("head", k, p) in rate)) { h[++nh] = rate["head", k, p]; hp[nh] = pg["head", k, p] }
        if ((("base", k, p) in rate) && (("head", k, p) in rate) && rate["base", k, p] > 0) {
          r[++nr] = rate["head", k, p] / rate["base", k, p]; line[k] = line[k] sprintf(" %.3f", r[nr]) }
      }
      mb = median(b, nb); mh = median(h, nh); lo = hi = r[1]
      for (j = 2; j <= nr; j++) { if (r[j] < lo) lo = r[j]; if (r[j] > hi) hi = r[j] }
      mbp = median(bp, nb); mhp = median(hp, nh)
      printf "%-18s %10.0f %10.0f %9.3f %7.3f-%-7.3f %9.3f %8.1f %8.1f %8.3f\n", k, mb, mh, (mb > 0 ? mh / mb : 0),
        lo, hi, median(r, nr), mbp, mhp, (mbp > 0 ? mhp / mbp : 0)
    }
    print ""
    print "head/base of each pair (pair 1, 2, ...):"
    for (i = 1; i <= ncases; i++) printf "  %-18s%s\n", order[i], line[order[i]]
    print ""
    print "other load during each case (cores, base / head), per pair:"
    for (p = 1; p <= pairs; p++) { s = 0; t = 0; c = 0
      for (i = 1; i <= ncases; i++) { s += other["base", order[i], p]; t += other["head", order[i], p]; c++ }
      printf "  pair %d: %.2f / %.2f\n", p, s / c, t / c }
  }'
grep -h DISTURBED "$out"/*.log | grep -v "is DISTURBED" | wc -l | xargs -I{} echo "[compare] {} DISTURBED rounds (others used more than --max-other-load cores); included above"
