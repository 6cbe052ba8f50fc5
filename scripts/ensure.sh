#!/usr/bin/env bash
# Make sure a program the tests need is available: scripts/ensure.sh
# PROGRAM ENV_VAR. Honours $ENV_VAR (a path or name, as the tests do);
# otherwise looks on PATH and, if allowed (root, or passwordless sudo) and
# apt-get exists, installs the Debian/Ubuntu package of the same name
# (redis-server, chromium).
set -euo pipefail

prog="$1"
var="$2"
msg="$prog not found: install it (apt-get install $prog) or set $var"

if [[ -n "${!var:-}" ]] && command -v "${!var}" >/dev/null 2>&1; then
	exit 0
fi
if command -v "$prog" >/dev/null 2>&1; then
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
		echo "ensure: installing $prog with apt-get" >&2
		"${as_root[@]}" apt-get update -qq
		"${as_root[@]}" apt-get install -y -qq --no-install-recommends "$prog" </dev/null
		if command -v "$prog" >/dev/null 2>&1; then
			exit 0
		fi
	fi
fi

echo "$msg" >&2
exit 1
