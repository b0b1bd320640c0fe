#!/usr/bin/env bash
# Usage: tools/apt/install.sh ME PACKAGE COMMAND ELSE
#
# Installs Debian's PACKAGE, which puts COMMAND on PATH, for the tests that
# need it; ME names the calling script in messages, ELSE says what to
# install on a machine without apt-get.
#
# Quiet and exit 0 when COMMAND is already on PATH. Otherwise, as root
# with apt-get, installs PACKAGE (refreshing the package lists only when
# apt does not know the package, or when an install from the cached lists
# fails) and prints one line; apt's output is shown only when it fails,
# and then the script exits non-zero. Without root or apt-get it prints
# one line saying why and exits 0: the tests that need COMMAND then say
# so, as each documents.
set -euo pipefail

if [ "$#" -ne 4 ]; then
	echo "usage: $0 ME PACKAGE COMMAND ELSE" >&2
	exit 2
fi
me=$1 package=$2 command=$3 otherwise=$4

if command -v "$command" >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "$me: $command is not installed; installing $package needs root (sudo apt-get install $package)"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$me: $command is not installed and there is no apt-get to install it with ($otherwise)"
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
install() { run apt-get install -y -qq --no-install-recommends "$package"; }

if ! apt-cache show "$package" >/dev/null 2>&1; then
	run apt-get update -qq
	install
elif ! install 2>/dev/null; then
	# The cached lists may name a version the mirror no longer has.
	run apt-get update -qq
	install
fi
if ! command -v "$command" >/dev/null 2>&1; then
	echo "$me: the $package package is installed but $command is not on PATH" >&2
	exit 1
fi
echo "$me: installed $("$command" --version 2>&1 | head -n 1)"
