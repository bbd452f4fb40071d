package confluent

import (
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/produce"
)

// deliveryChan returns a receiver's report channel as the chan
// kafka.Event that kafka.Producer.Produce takes: the same channel, so
// librdkafka's poller writes each delivery report straight to the
// receiver (no goroutine, channel or allocation in between), while the
// produce core, which serves every client, reads it as a chan
// produce.Event.
//
// The two element types are interfaces with the same method set
// (String() string): their values have the same layout (method table,
// data pointer), so the channel's buffer and every send and receive are
// the same either way. What differs is the method table a value read
// through the other type carries: a produce.Event read here holds
// kafka.Event's, so it must be converted back with kafka.Event(ev) before
// its dynamic type is asked (client.Report does: a type assertion on the
// unconverted value would not match). The core only stores, passes on
// and hands such values to client.Report. TestDeliveryReportsReachTheStage
// and the producer conformance suite check the round trip.
func deliveryChan(reports chan produce.Event) chan kafka.Event {
	return *(*chan kafka.Event)(unsafe.Pointer(&reports))
}
