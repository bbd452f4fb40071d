package confluent_test

import (
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A delivery report is read for its ticket and error only, so the
// producer has confluent-kafka-go leave the message's key, value and
// headers out of it (go.delivery.report.fields=none) instead of copying
// them back into Go memory for every message.
func TestDeliveryReportCarriesNoPayload(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("out", 1))
	p := newProducer(t, b, nil)
	defer p.Close()
	rep, err := confluent.DeliveryReport(p, "out", sluice.Message{
		Key: []byte("k"), Value: []byte("value"), Headers: []sluice.Header{{Key: "h", Value: []byte("v")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep == nil || rep.TopicPartition.Error != nil {
		t.Fatalf("report %v, want a delivered message", rep)
	}
	if rep.Key != nil || rep.Value != nil || rep.Headers != nil {
		t.Errorf("report carries key %q, value %q, headers %v; want none", rep.Key, rep.Value, rep.Headers)
	}
}

// The producer's Events channel only carries errors (each receiver has
// its own report channel) and ProduceChannel is unused: neither gets
// confluent-kafka-go's default of a million entries, 24 MB allocated up
// front for every producer.
func TestProducerChannelsAreSmall(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	p := newProducer(t, b, nil)
	defer p.Close()
	events, produce := confluent.ChannelCapacities(p)
	if events > 1024 || produce != 0 {
		t.Errorf("Events capacity %d, ProduceChannel capacity %d; want at most 1024 and 0", events, produce)
	}
}

// librdkafka writes a receiver's delivery reports as kafka.Events to the
// receiver's chan produce.Event (deliveryChan); the stage's read of one is
// a delivery report, delivered.
func TestDeliveryReportsReachTheStage(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("out", 1))
	p := newProducer(t, b, nil)
	isReport, err := confluent.StageReport(p, "out", sluice.Message{Value: []byte("v")})
	if !isReport || err != nil {
		t.Fatalf("report read as a delivery report: %v, error %v; want true, nil", isReport, err)
	}
}
