#!/usr/bin/env bash
# Installs qemu-aarch64 (Debian's qemu-user package), which runs the
# functions' linux/arm64 bootstraps on another architecture: the tests of
# internal/shipped run each bootstrap under it, as Lambda runs it. Without
# root or apt-get it says why and exits 0, and those tests skip with their
# reason (tools/apt/install.sh).
set -euo pipefail
exec bash "$(dirname "$0")/../apt/install.sh" tools/qemu/install.sh qemu-user qemu-aarch64 \
	"install QEMU's user-mode emulator for aarch64"
