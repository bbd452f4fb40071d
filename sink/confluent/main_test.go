package confluent_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// librdkafka's threads are C threads, invisible to goleak; the Go side of
// the producer and of the consumers stops on Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(kafkatest.Pooled(m)) }
