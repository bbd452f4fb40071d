package sourcetest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/testkit/sourcetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The fake source passes the conformance suite.
func TestFake(t *testing.T) {
	sourcetest.Run(t, sourcetest.NewFakeDriver())
}
