package franz

import (
	"testing"

	"go.uber.org/goleak"
)

// Every kgo client a test starts is closed by Run (or by the probe in
// NewSource), and Close waits for kgo's goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
