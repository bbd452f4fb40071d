package pgtest

import (
	"errors"
	"os"
	"testing"
)

// skipOrFail ends the test for a server that did not start: a skip when
// PostgreSQL is not installed and RequireEnv is unset, else a failure.
func skipOrFail(tb testing.TB, err error) {
	tb.Helper()
	switch {
	case !errors.Is(err, ErrNotInstalled):
		tb.Fatal(err)
	case os.Getenv(RequireEnv) == "":
		tb.Skipf("%v (set %s=1 to fail instead of skipping)", err, RequireEnv)
	default:
		tb.Fatalf("%v (%s is set: the tests require PostgreSQL)", err, RequireEnv)
	}
}
