package redisstore

// TagOf exposes the hash tag of a key to the tests.
var TagOf = tagOf

// RedisKey exposes the Redis key of a limiter's key to the tests.
func RedisKey(lim *Limiter, key string) string { return lim.redisKey(hashOf(key), key) }
