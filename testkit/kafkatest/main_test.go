package kafkatest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(kafkatest.Pooled(m)) }
