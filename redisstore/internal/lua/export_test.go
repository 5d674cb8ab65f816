package lua

// LibSource returns lib.lua at the top level of a chunk, for the tests of
// the integer library.
func LibSource() string {
	b, err := sources.ReadFile("lib.lua")
	if err != nil {
		panic(err)
	}
	return "local L = {}\n" + string(b)
}
