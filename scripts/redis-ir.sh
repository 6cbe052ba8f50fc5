#!/usr/bin/env bash
# redis-ir.sh: the instructions redis-server executes for a command's
# Redis work, counted by valgrind's callgrind. Unlike CPU time, the count
# repeats on a shared, noisy machine, so two versions of a script can be
# compared by one run each. The redis-server first on PATH is profiled:
# scripts/redis-symbols.sh builds one whose profile names its functions.
#
#   scripts/redis-ir.sh COMMAND [ARG...]
#   e.g. scripts/redis-ir.sh go run ./bench/model -paths sluice -jobs 20000 -rounds 1
#   or, single Enqueue calls (2,001 of them, the first a probe):
#   go test -c -o /tmp/flow.test ./flow &&
#     scripts/redis-ir.sh /tmp/flow.test -test.run XXX -test.bench 'BenchmarkEnqueue$' -test.benchtime 2000x
#
# COMMAND runs twice against one redis-server under callgrind, reached
# through SLUICE_TEST_REDIS_ADDR (internal/redisproc): once to load the
# scripts and warm up, then, after FLUSHALL (functions stay loaded) and
# with the counts zeroed, the measured run. Prints that run's total
# instructions and those spent in FCALL (Sluice's scripts, the commands
# they run included: what a command like bench/model adds around them,
# its slow log reads say, is not); with IR_OUT set, keeps the profile
# there for callgrind_annotate.
set -euo pipefail
for tool in valgrind callgrind_control redis-server redis-cli; do
	command -v "$tool" >/dev/null || { echo "redis-ir.sh: $tool not found (apt-get install valgrind redis-server)" >&2; exit 1; }
done
(($#)) || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/valgrind.log" 2>&1 &
vg=$!
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$vg" 2>/dev/null; wait "$vg" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
	redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.2
done
export SLUICE_TEST_REDIS_ADDR="127.0.0.1:$port"
"$@" >"$dir/warm.log" 2>&1 || { cat "$dir/warm.log" >&2; exit 1; }
redis-cli -p "$port" flushall >/dev/null
callgrind_control -z "$vg" >/dev/null 2>&1
"$@"
callgrind_control -d "$vg" >/dev/null 2>&1
sleep 1
out=$(ls -t "$dir"/cg.out* | head -1)
total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !n++ { gsub(",", "", $1); print $1 }')
fcall=$(callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | awk '/:fcallCommand / && !n++ { gsub(",", "", $1); print $1 }')
echo "redis-server instructions: $total, in FCALL: ${fcall:-0}"
if [[ -n "${IR_OUT:-}" ]]; then cp "$out" "$IR_OUT"; fi
