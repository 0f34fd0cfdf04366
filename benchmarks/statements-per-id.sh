#!/usr/bin/env bash
# The SQL one id costs, counted from the PostgreSQL driver's own protocol log: runs one case of
# the ledger suite briefly (one round, timing not used) with pgjdbc logging at FINEST, and prints
# per id, for each statement the case sends at least once per call, how many times it was executed
# (Execute messages) and how many round trips ended with it (Sync messages; BEGIN travels with the
# statement after it). Noise-free: on a machine too busy for timings to tell 5 % apart, two jars
# that send the same statements, as often, cost the database the same.
#
#   benchmarks/statements-per-id.sh <sumi-benchmarks.jar> <case> [per-call ids, default 1] [benchmark options...]
#
# e.g. benchmarks/statements-per-id.sh benchmarks/target/compare/base.jar sumi-lease
#      benchmarks/statements-per-id.sh benchmarks/target/compare/head.jar sumi-batch-100 100
# It also writes every statement text the run parsed (schema names replaced by T) to
# <dir>/statements.txt, for a diff between two jars.
set -euo pipefail
jar=${1:?usage: benchmarks/statements-per-id.sh <jar> <case> [per-call ids] [options...]}
case=${2:?usage: benchmarks/statements-per-id.sh <jar> <case> [per-call ids] [options...]}
shift 2
per_call=1
if [[ ${1:-} =~ ^[0-9]+$ ]]; then per_call=$1; shift; fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/sumi-statements.XXXXXX")
cat > "$dir/logging.properties" <<PROPS
handlers=java.util.logging.FileHandler
java.util.logging.FileHandler.pattern=$dir/pgjdbc.log
java.util.logging.FileHandler.level=FINEST
java.util.logging.FileHandler.limit=0
java.util.logging.FileHandler.formatter=java.util.logging.SimpleFormatter
java.util.logging.SimpleFormatter.format=%5\$s%n
.level=INFO
org.postgresql.level=FINEST
PROPS
java -Djava.util.logging.config.file="$dir/logging.properties" -jar "$jar" ledger --rounds=1 --cases="$case" \
  --warmup=0.3 --duration=1 --quiet-wait=0 --retries=0 "$@" > "$dir/run.log"
ids=$(sed -n 's/^round 1 .* \([0-9,]*\) ids checked in the table.*/\1/p' "$dir/run.log" | tr -d ,)
echo "$case ($jar): $ids ids; driver log in $dir"
python3 - "$dir/pgjdbc.log" "$ids" "$per_call" "$dir/statements.txt" <<'PY'
import collections, re, sys
log, ids, per_call, texts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
records = re.split(r'\n(?= (?:FE=>|<=BE) )', open(log).read())
names, current, last = {}, None, None
executed, synced = collections.Counter(), collections.Counter()
parsed = set()
for r in (r.strip() for r in records):
    if r.startswith('FE=> Parse('):
        m = re.match(r'FE=> Parse\(stmt=([^,]*),query="(.*?)",oids=', r, re.S)
        text = re.sub(r'bench_[a-z0-9_]+', 'T', ' '.join(m.group(2).split()))
        names[m.group(1)] = text
        parsed.add(text)
    elif r.startswith('FE=> Bind('):
        current = names.get(re.match(r'FE=> Bind\(stmt=([^,]*),', r).group(1), '?')
    elif r.startswith('FE=> Execute('):
        executed[current] += 1
        last = current
    elif r.startswith('FE=> Sync'):
        synced[last] += 1
    elif r.startswith('FE=> SimpleQuery(') and 'SET application_name' not in r:
        # (the driver's own start-up statement, once per new connection, is not the case's)
        text = ' '.join(r[len('FE=> SimpleQuery('):].split())[:80]
        executed[text] += 1
calls = ids / per_call
total_e = total_s = 0
for text, n in executed.most_common():
    if n >= 0.9 * calls:  # once per call or more: the case's own statements, not the harness's set-up
        print(f"  {n / ids:7.3f} executed/id {synced[text] / ids:7.3f} round trips/id  {text[:90]}")
        total_e += n
        total_s += synced[text]
print(f"  {total_e / ids:7.3f} executed/id {total_s / ids:7.3f} round trips/id  in all")
open(texts, 'w').write('\n'.join(sorted(parsed)) + '\n')
PY
