package pgtest

import (
	"testing"

	"go.uber.org/goleak"
)

// shared is the server of this package's tests that need no server of
// their own.
var shared Shared

func TestMain(m *testing.M) { goleak.VerifyTestMain(shared.StopAfter(m)) }
