package keypath

// SetMaxDecoded sets the limit of powertools_base64_gzip to n and returns
// what restores it. Not for parallel tests.
func SetMaxDecoded(n int) (restore func()) {
	old := maxDecoded
	maxDecoded = n
	return func() { maxDecoded = old }
}
