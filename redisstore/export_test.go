package redisstore

// TagOf exposes the hash tag of a key to the tests.
var TagOf = tagOf
