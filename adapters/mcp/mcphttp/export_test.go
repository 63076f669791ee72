package mcphttp

// The handler without the front, and the front's reading of a body, for
// the tests of package mcphttp_test.
var (
	NewHandler = newHandler
	Read       = read
)
