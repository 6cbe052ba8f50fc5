#!/usr/bin/env bash
# Start/stop a local 3-master Redis Cluster for manual experiments:
#   scripts/cluster.sh up             # masters on 127.0.0.1:7001-7003
#   REPLICAS=1 scripts/cluster.sh up  # plus a replica each on 7004-7006
#   scripts/cluster.sh down           # stop the nodes and delete their state
# State lives in /tmp/sluice-cluster. Nodes mark a peer failed after 2000 ms
# (--cluster-node-timeout), then its replica takes over.
# Uses redis-cli when available, else speaks RESP over bash's /dev/tcp.
# (Tests do not use this: they start their own cluster via internal/redistest.)
set -euo pipefail

masters=3
replicas=${REPLICAS:-0}
[[ $replicas =~ ^[0-9]$ ]] || { echo "cluster.sh: REPLICAS must be 0-9, got '$replicas'" >&2; exit 1; }
ports=()
for ((i = 1; i <= masters * (1 + replicas); i++)); do ports+=($((7000 + i))); done
base=${SLUICE_CLUSTER_DIR:-/tmp/sluice-cluster}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI-$(command -v redis-cli || true)}

die() { echo "cluster.sh: $*" >&2; exit 1; }

# rcmd PORT ARG... : run one command, print the reply (errors start with "ERR"
# or similar and make rcmd fail).
rcmd() {
	local port=$1 out
	shift
	if [[ -n "$cli" && -x "$cli" ]]; then
		out=$("$cli" -h 127.0.0.1 -p "$port" "$@" 2>&1) || return 1
	else
		local crlf=$'\r\n' req a
		req="*$#$crlf"
		for a in "$@"; do req+="\$${#a}$crlf$a$crlf"; done
		req+="*1$crlf\$4${crlf}QUIT$crlf"
		exec 3<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null || return 1
		printf '%s' "$req" >&3
		out=$(tr -d '\r' <&3) || true
		exec 3<&-
		out=${out%+OK} # the QUIT reply
		out=${out%$'\n'}
		case $out in
		-*) out=${out#-} ;;
		+*) out=${out#+} ;;
		\$*) out=${out#*$'\n'} ;;
		esac
	fi
	printf '%s\n' "$out"
	case $out in ERR* | WRONGTYPE* | NOAUTH* | LOADING* | CLUSTERDOWN* | MOVED*) return 1 ;; esac
}

# wait_for DESCRIPTION COMMAND... : poll every 0.1s for up to 20s.
wait_for() {
	local what=$1 i
	shift
	for ((i = 0; i < 200; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	die "timed out waiting for $what"
}

is_pong() { [[ "$(rcmd "$1" PING)" == PONG ]]; }
is_ok() { rcmd "$1" CLUSTER INFO | grep -q '^cluster_state:ok'; }
link_up() { rcmd "$1" INFO replication | grep -q '^master_link_status:up'; }
# replicate PORT MASTER_PORT : fails until gossip told PORT about the master.
replicate() { rcmd "$1" CLUSTER REPLICATE "$(rcmd "$2" CLUSTER MYID)"; }

up() {
	command -v "$server" >/dev/null 2>&1 ||
		die "redis-server not found: install it (apt-get install redis-server) or set REDIS_SERVER"
	local p running=0
	for p in "${ports[@]}"; do
		if is_pong "$p" 2>/dev/null; then running=$((running + 1)); fi
	done
	if ((running == ${#ports[@]})) && is_ok "${ports[0]}" 2>/dev/null; then
		echo "cluster already up: 127.0.0.1:${ports[0]}-${ports[-1]}"
		return 0
	fi
	((running == 0)) || die "some of ports ${ports[*]} are in use but no healthy cluster; run '$0 down' first"

	rm -rf "$base" # stale state from a crashed run
	for p in "${ports[@]}"; do
		mkdir -p "$base/$p"
		"$server" --port "$p" --bind 127.0.0.1 --dir "$base/$p" \
			--daemonize yes --pidfile "$base/$p/redis.pid" --logfile "$base/$p/redis.log" \
			--save "" --appendonly no \
			--cluster-enabled yes --cluster-config-file nodes.conf \
			--cluster-node-timeout 2000 --cluster-announce-ip 127.0.0.1
	done
	for p in "${ports[@]}"; do
		wait_for "redis-server on port $p (log: $base/$p/redis.log)" is_pong "$p"
	done

	local n=$masters i lo hi
	for ((i = 0; i < n; i++)); do
		lo=$((i * 16384 / n))
		hi=$(((i + 1) * 16384 / n - 1))
		rcmd "${ports[i]}" CLUSTER ADDSLOTSRANGE "$lo" "$hi" >/dev/null ||
			die "CLUSTER ADDSLOTSRANGE $lo $hi on port ${ports[i]} failed"
	done
	for ((i = 1; i < ${#ports[@]}; i++)); do
		rcmd "${ports[0]}" CLUSTER MEET 127.0.0.1 "${ports[i]}" >/dev/null ||
			die "CLUSTER MEET 127.0.0.1 ${ports[i]} failed"
	done
	for ((i = n; i < ${#ports[@]}; i++)); do
		wait_for "port ${ports[i]} to replicate port ${ports[i % n]}" replicate "${ports[i]}" "${ports[i % n]}"
	done
	for p in "${ports[@]}"; do
		wait_for "cluster_state:ok on port $p" is_ok "$p"
	done
	for ((i = n; i < ${#ports[@]}; i++)); do
		wait_for "replication link of port ${ports[i]}" link_up "${ports[i]}"
	done
	echo "cluster up: masters $(printf '127.0.0.1:%s ' "${ports[@]:0:n}")"
	((n == ${#ports[@]})) || echo "            replicas $(printf '127.0.0.1:%s ' "${ports[@]:n}")"
	echo "state in $base; connect with redis+cluster://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}"
}

down() {
	local f pid i
	for f in "$base"/*/redis.pid; do # whatever REPLICAS was at 'up'
		[[ -f "$f" ]] || continue
		pid=$(<"$f")
		kill -TERM "$pid" 2>/dev/null || continue
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	rm -rf "$base"
	echo "cluster down"
}

case "${1:-}" in
up) up ;;
down) down ;;
*) die "usage: $0 up|down" ;;
esac
