package confluent

import (
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/sink"
)

// DeadLetter returns the destination to pass to pipeline.WithDeadLetter,
// with the contract of sink.Producer.DeadLetter. What is particular to
// librdkafka: a full producer queue is waited out until the call's
// context ends or Close starts, and the failures marked sluice.Permanent
// (Run stops at once) are the producer closed ([ErrClosed]) or failed
// fatally, a message too large, an unknown topic, bad configuration or
// credentials; others (a delivery that timed out after
// message.timeout.ms) are retried under Run's retry policy. The start
// check (the result's CheckStart) looks the topic up unless
// [ProducerConfig.SkipTopicCheck].
func (p *Producer) DeadLetter(topic string) sink.DeadLetterFunc {
	return produce.CoreDeadLetter(p.core, "confluent: Producer.DeadLetter", topic)
}
