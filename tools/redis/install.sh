#!/usr/bin/env bash
# Installs redis-server (Debian's redis-server package), which the tests
# of the idempotency/redisstore module start, one server per test binary
# on a free loopback port, and stop when they end.
#
# Quiet and exit 0 when redis-server is already on PATH. Otherwise, as
# root with apt-get, installs redis-server (refreshing the package lists
# only when apt does not know the package, or when an install from the
# cached lists fails) and prints one line; apt's output is shown only
# when it fails, and then the script exits non-zero. Without root or
# apt-get it prints one line saying why and exits 0: the redisstore
# tests then fail saying redis-server is missing, or skip with the
# reason when IDEMTEST_SKIP_UNAVAILABLE is set.
set -euo pipefail

me=tools/redis/install.sh

if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "$me: redis-server is not installed; installing it needs root (sudo apt-get install redis-server)"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$me: redis-server is not installed and there is no apt-get to install it with (install Redis, or Valkey with REDIS_SERVER naming its valkey-server)"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run CMD...: runs CMD with its output in $log; on failure shows it.
run() {
	if ! "$@" >"$log" 2>&1; then
		echo "$me: $* failed:" >&2
		cat "$log" >&2
		return 1
	fi
}
install() { run apt-get install -y -qq --no-install-recommends redis-server; }

if ! apt-cache show redis-server >/dev/null 2>&1; then
	run apt-get update -qq
	install
elif ! install 2>/dev/null; then
	# The cached lists may name a version the mirror no longer has.
	run apt-get update -qq
	install
fi
if ! command -v redis-server >/dev/null 2>&1; then
	echo "$me: the redis-server package is installed but redis-server is not on PATH" >&2
	exit 1
fi
echo "$me: installed $(redis-server --version)"
