#!/usr/bin/env bash
# redis-symbols.sh: build the installed redis-server's Debian source with
# its symbols kept, so that callgrind (scripts/redis-ir.sh) can say which
# of redis-server's functions a script's instructions go to. Debian's
# binary is stripped: its profile is one total.
#
#   scripts/redis-symbols.sh DIR
#   PATH=DIR/redis-<version>/src:$PATH scripts/redis-ir.sh COMMAND [ARG...]
#   callgrind_annotate --inclusive=yes --auto=no "$IR_OUT" | less
#
# It needs deb-src entries in apt's sources (a file in
# /etc/apt/sources.list.d/ with "Types: deb-src", the URIs and suites of
# the deb entries) and dpkg-dev. The build uses libc's malloc (Debian's
# patch for its own jemalloc does not link here) and Redis's bundled Lua,
# where Debian's package links its own: the totals differ from the
# installed server's by about 1%, so compare builds on one server.
set -euo pipefail
(($# == 1)) || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$1"
cd "$1"
if ! ls -d redis-*/src >/dev/null 2>&1; then
	apt-get source -q redis || {
		echo "redis-symbols.sh: apt-get source failed: add deb-src entries to apt's sources, apt-get update, and install dpkg-dev" >&2
		exit 1
	}
fi
src=$(ls -d redis-*/ | head -1)
make -C "$src" -j"$(nproc)" MALLOC=libc OPTIMIZATION=-O2 >build.log 2>&1 || { tail -20 build.log >&2; exit 1; }
echo "$PWD/${src%/}/src/redis-server"
