package testkit

import (
	"flag"
	"testing"
)

// RunExample runs fn with a *testing.T, the way go test runs a test named
// name, so that an Example function, which gets no *testing.T, can use
// testing/synctest and the helpers that take a testing.TB (in your own
// tests, write func TestX(t *testing.T) and use t). Pass the Example's
// name, so that a -run pattern that selects the Example selects fn too.
// While fn runs, -v is off, so that fn's progress lines do not mix with
// the Example's output, and -count is 1, so that fn runs once, as the
// Example does; a failure prints its message, which fails the Example.
// It is for test binaries: it runs fn with testing.RunTests.
func RunExample(name string, fn func(t *testing.T)) {
	for flagName, value := range map[string]string{"test.v": "false", "test.count": "1"} {
		if f := flag.Lookup(flagName); f != nil {
			old := f.Value.String()
			_ = f.Value.Set(value)
			defer func() { _ = f.Value.Set(old) }()
		}
	}
	testing.RunTests(func(_, _ string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: name, F: fn}})
}
