package confluent

import (
	"context"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// Pending returns how many messages p handed to librdkafka whose delivery
// report no receiver has read yet (for tests in package sink_test).
func Pending(p *Producer) int64 { return p.tr.Pending() }

// InjectFatal makes p's client fail fatally, as librdkafka does when an
// idempotent producer's sequence breaks.
func InjectFatal(p *Producer) {
	p.p.TestFatalError(kafka.ErrOutOfOrderSequenceNumber, "injected by the test")
}

// DeliveryReport produces m to topic through the client a Produce stage
// uses and returns its delivery report, as the stage reads it.
func DeliveryReport(p *Producer, topic string, m sluice.Message) (*kafka.Message, error) {
	reports := make(chan produce.Event, 1)
	if err := (client{p}).Send(context.Background(), &produce.Outgoing{Topic: topic, Message: m}, reports); err != nil {
		return nil, err
	}
	ev := <-reports
	msg, _ := kafka.Event(ev).(*kafka.Message)
	return msg, nil
}

// ChannelCapacities returns the capacities of the confluent-kafka-go
// channels p allocates up front: Events and ProduceChannel.
func ChannelCapacities(p *Producer) (events, produce int) {
	//lint:ignore SA1019 reads the capacity of the channel NewProducer allocates; nothing is produced through it
	return cap(p.p.Events()), cap(p.p.ProduceChannel())
}

// StageReport produces m to topic through the client a Produce stage uses
// and reads its delivery report as the stage does (client.Report on the
// chan produce.Event librdkafka wrote to): whether it is taken for a
// delivery report, and its error.
func StageReport(p *Producer, topic string, m sluice.Message) (isReport bool, err error) {
	reports := make(chan produce.Event, 1)
	if err := (client{p}).Send(context.Background(), &produce.Outgoing{Topic: topic, Message: m}, reports); err != nil {
		return false, err
	}
	_, err, isReport = (client{p}).Report(<-reports)
	return isReport, err
}

// MaxBuffered is the bound of librdkafka's buffer that p's Produce stages
// share (queue.buffering.max.messages).
func MaxBuffered(p *Producer) int { return (client{p}).MaxBuffered() }
