package follow_test

import (
	"testing"

	"github.com/sluice-go/sluice/testkit/kafkatest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(kafkatest.Pooled(m)) }
