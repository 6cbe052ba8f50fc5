//go:build !linux

package isolated_test

// leakMain is held_test.go's child on Linux, whose test alone runs it;
// elsewhere the test package only needs the name to build.
func leakMain(bool) int { return 2 }
