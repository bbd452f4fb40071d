package franz

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Every kgo client a test starts is closed by Run (or by the probe in
// NewSource), and Close waits for kgo's goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(kafkatest.Pooled(m)) }
