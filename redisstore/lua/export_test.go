package lua

// LibSource returns lib.lua, for the tests of the integer library.
func LibSource() string {
	b, err := sources.ReadFile("lib.lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}
