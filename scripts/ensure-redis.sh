#!/usr/bin/env bash
# Make sure a redis-server binary is available for the integration tests.
# Honours $REDIS_SERVER (as the test harness does); otherwise looks on PATH
# and, if allowed (root, or passwordless sudo) and apt-get exists, installs
# the Debian/Ubuntu redis-server package.
set -euo pipefail

msg='redis-server not found: install it (apt-get install redis-server) or set REDIS_SERVER'

if [[ -n "${REDIS_SERVER:-}" ]] && command -v "$REDIS_SERVER" >/dev/null 2>&1; then
	exit 0
fi
if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
	if [[ "$(id -u)" -eq 0 ]]; then
		as_root=(env DEBIAN_FRONTEND=noninteractive)
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		as_root=(sudo -n env DEBIAN_FRONTEND=noninteractive)
	else
		as_root=()
	fi
	if [[ ${#as_root[@]} -gt 0 ]]; then
		echo "ensure-redis: installing redis-server with apt-get" >&2
		"${as_root[@]}" apt-get update -qq
		"${as_root[@]}" apt-get install -y -qq redis-server </dev/null
		if command -v redis-server >/dev/null 2>&1; then
			exit 0
		fi
	fi
fi

echo "$msg" >&2
exit 1
