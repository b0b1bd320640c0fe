#!/usr/bin/env bash
# Installs redis-server (Debian's redis-server package), which the tests
# of the idempotency/redisstore module start, one server per test binary
# on a free loopback port, and stop when they end. Without root or apt-get
# it says why and exits 0: the redisstore tests then fail saying
# redis-server is missing, or skip with the reason when
# IDEMTEST_SKIP_UNAVAILABLE is set (tools/apt/install.sh).
set -euo pipefail
exec bash "$(dirname "$0")/../apt/install.sh" tools/redis/install.sh redis-server redis-server \
	"install Redis, or Valkey with REDIS_SERVER naming its valkey-server"
