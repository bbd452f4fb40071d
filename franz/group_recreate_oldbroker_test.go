package franz

import (
	"testing"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// As TestSourceTopicRecreatedRecordInFlight, the client speaking the
// protocol of Kafka 3.9 (kgo.MaxVersions), whose OffsetCommit names
// topics by name, not by ID: the old record's offset must not be
// committed onto the new topic either.
func TestSourceTopicRecreatedRecordInFlightKafka39(t *testing.T) {
	b := kafkatest.NewBroker(t)
	testRecordInFlight(t, b, newKafka39Source(t, b), doneEnd)
}

// As TestTransactionalSourceTopicRecreatedRecordInFlight, the client
// speaking the protocol of Kafka 3.9 (TxnOffsetCommit by topic name).
func TestTransactionalSourceTopicRecreatedRecordInFlightKafka39(t *testing.T) {
	b := kafkatest.NewBroker(t)
	src := newKafka39Source(t, b)
	testRecordInFlight(t, b, src, txnEnd(t, b, src))
}
