package produce_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The stage tests run pipeline.Run over testkit's Fake and a stub client
// inside synctest bubbles: nothing may outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
