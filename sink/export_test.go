package sink

import "github.com/confluentinc/confluent-kafka-go/v2/kafka"

// Pending returns how many messages p handed to librdkafka whose delivery
// report no receiver has read yet (for tests in package sink_test).
func Pending(p *Producer) int64 { return p.tr.Pending() }

// InjectFatal makes p's client fail fatally, as librdkafka does when an
// idempotent producer's sequence breaks.
func InjectFatal(p *Producer) {
	p.p.TestFatalError(kafka.ErrOutOfOrderSequenceNumber, "injected by the test")
}
