package sourcetest_test

import (
	"testing"

	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// The fake share source passes the share scenarios.
func TestFakeShare(t *testing.T) {
	sourcetest.RunShare(t, sourcetest.NewFakeShareDriver())
}
