package redisstore

import "github.com/redis/go-redis/v9"

// The scripts compare no time but those they are given (never TIME) and
// touch only KEYS[1]. Field names are those of store.go's field
// constants; times are epoch milliseconds (leaseUntil) and seconds
// (expiresAt), which Lua's numbers hold exactly.

// acquireScript takes the record KEYS[1] when it does not exist or is
// free (idempotency.Entry.Free), with a fresh lease and the lease counter
// plus one, and answers {1, the record}; otherwise it writes nothing and
// answers {0, the record}.
//
// ARGV: the entry format, the fingerprint, now in ms, now in s, the new
// lease id, its end in ms, the record's expiry in s and as the key's
// expiry in ms (both "" for none).
var acquireScript = redis.NewScript(`
local key = KEYS[1]
local format, fp = ARGV[1], ARGV[2]
local nowMs, nowS = tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', key) == 1 then
	local r = redis.call('HMGET', key, 'format', 'status', 'fingerprint', 'leaseUntil', 'expiresAt')
	local free = false
	if r[1] == format then
		local status = r[2]
		if status == 'RELEASED' then
			free = true
		elseif status == 'IN_PROGRESS' then
			local untilMs = tonumber(r[4])
			free = r[3] == fp and untilMs ~= nil and untilMs <= nowMs
		elseif status == 'COMPLETED' or status == 'FAILED' then
			local expires = tonumber(r[5])
			free = expires ~= nil and expires ~= 0 and expires <= nowS
		end
	end
	if not free then
		return {0, redis.call('HGETALL', key)}
	end
end
redis.call('HINCRBY', key, 'leaseCount', 1)
redis.call('HSET', key, 'format', format, 'status', 'IN_PROGRESS', 'fingerprint', fp,
	'leaseId', ARGV[5], 'leaseUntil', ARGV[6])
redis.call('HDEL', key, 'output', 'failure')
if ARGV[7] == '' then
	redis.call('HDEL', key, 'expiresAt')
else
	redis.call('HSET', key, 'expiresAt', ARGV[7])
end
local record = redis.call('HGETALL', key)
if ARGV[8] == '' then
	redis.call('PERSIST', key)
else
	redis.call('PEXPIREAT', key, ARGV[8])
end
return {1, record}
`)

// fence is the start of the scripts that write under a lease: unless
// the record KEYS[1] is of the entry format (ARGV[1]), IN_PROGRESS, and
// under the lease of id ARGV[2] and count ARGV[3], they answer 0 having
// written nothing.
const fence = `
local key = KEYS[1]
local r = redis.call('HMGET', key, 'format', 'status', 'leaseId', 'leaseCount')
if r[1] ~= ARGV[1] or r[2] ~= 'IN_PROGRESS' or r[3] ~= ARGV[2] or r[4] ~= ARGV[3] then
	return 0
end
`

// settleScript stores an outcome under the fence and answers 1.
//
// ARGV after the fence's: the status, the record's expiry in s and as the
// key's expiry in ms (both "" for none), the outcome's field (output or
// failure) and its value.
var settleScript = redis.NewScript(fence + `
redis.call('HSET', key, 'status', ARGV[4], ARGV[7], ARGV[8])
if ARGV[5] == '' then
	redis.call('HDEL', key, 'expiresAt')
	redis.call('PERSIST', key)
else
	redis.call('HSET', key, 'expiresAt', ARGV[5])
	redis.call('PEXPIREAT', key, ARGV[6])
end
return 1
`)

// releaseScript marks the record RELEASED under the fence, keeping its
// counter and expiry, and answers 1.
var releaseScript = redis.NewScript(fence + `
redis.call('HSET', key, 'status', 'RELEASED')
return 1
`)
