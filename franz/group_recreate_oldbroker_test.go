package franz

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// As TestSourceTopicRecreatedRecordInFlight, the client speaking the
// protocol of Kafka 3.9 (kgo.MaxVersions), whose OffsetCommit names
// topics by name, not by ID: the old record's offset must not be
// committed onto the new topic either.
func TestSourceTopicRecreatedRecordInFlightKafka39(t *testing.T) {
	b := kafkatest.NewBroker(t)
	src, err := NewSource(Config{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second, Logger: kafkatest.Logger(t),
		Opts: []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}})
	if err != nil {
		t.Fatal(err)
	}
	testRecordInFlight(t, b, src, doneEnd)
}

// As TestTransactionalSourceTopicRecreatedRecordInFlight, the client
// speaking the protocol of Kafka 3.9 (TxnOffsetCommit by topic name).
func TestTransactionalSourceTopicRecreatedRecordInFlightKafka39(t *testing.T) {
	b := kafkatest.NewBroker(t)
	src, err := NewSource(Config{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second, Logger: kafkatest.Logger(t),
		Opts: []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}})
	if err != nil {
		t.Fatal(err)
	}
	testRecordInFlight(t, b, src, txnEnd(t, b, src))
}
