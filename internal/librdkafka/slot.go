package librdkafka

import (
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// SourceSlot returns the exactly-once slot of src, a *source.Source:
// confluent.NewTransactionalProducer binds its producer there, and the
// source's Run takes it. Package source sets it once, in its init
// (sink/confluent imports source, so it is set before sink/confluent can
// call it); it holds no
// state of its own: the binding lives in the source. A function set here,
// rather than a method of source.Source, keeps the binding out of the
// API users see.
var SourceSlot func(src any) *exactlyonce.Slot[*kafka.Producer]
