#!/usr/bin/env bash
# Installs qemu-aarch64 (Debian's qemu-user package), which runs the
# functions' linux/arm64 bootstraps on another architecture: the tests of
# internal/shipped run each bootstrap under it, as Lambda runs it.
#
# Quiet and exit 0 when qemu-aarch64 is already on PATH. Otherwise, as
# root with apt-get, installs qemu-user (refreshing the package lists
# only when apt does not know the package, or when an install from the
# cached lists fails) and prints one line; apt's output is shown only
# when it fails, and then the script exits non-zero. Without root or
# apt-get it prints one line saying why and exits 0: the tests that need
# qemu-aarch64 then skip, with their reason.
set -euo pipefail

me=tools/qemu/install.sh

if command -v qemu-aarch64 >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "$me: qemu-aarch64 is not installed; installing qemu-user needs root (sudo apt-get install qemu-user)"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$me: qemu-aarch64 is not installed and there is no apt-get to install it with (install QEMU's user-mode emulator for aarch64)"
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
install() { run apt-get install -y -qq --no-install-recommends qemu-user; }

if ! apt-cache show qemu-user >/dev/null 2>&1; then
	run apt-get update -qq
	install
elif ! install 2>/dev/null; then
	# The cached lists may name a version the mirror no longer has.
	run apt-get update -qq
	install
fi
if ! command -v qemu-aarch64 >/dev/null 2>&1; then
	echo "$me: qemu-user is installed but qemu-aarch64 is not on PATH" >&2
	exit 1
fi
echo "$me: installed $(qemu-aarch64 --version | head -n 1)"
