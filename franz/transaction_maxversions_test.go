package franz_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Exactly-once with the client capped below KIP-890 part 2
// (kgo.MaxVersions of Kafka 3.9) on a cluster that runs it: kgo then
// keeps the old protocol (AddOffsetsToTxn before TxnOffsetCommit), and so
// must the source, or the broker refuses the offsets (INVALID_TXN_STATE)
// and no transaction commits.
func TestTransactionalMaxVersionsBelowKIP890(t *testing.T) {
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("orders", 1), kafkatest.WithTopic("out", 1))
	b.Produce(t, "orders", sluice.Record{Value: []byte("a")}, sluice.Record{Value: []byte("b")})
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders"},
		CommitInterval: 50 * time.Millisecond, Logger: kafkatest.Logger(t)},
		Opts: []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "capped-1"}})
	if err != nil {
		t.Fatal(err)
	}
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, "out", upperCase)
	}
	r := testkit.Start(t, src, build)
	b.WaitCommitted(t, "g", "orders", map[int32]int64{0: 2})
	if err := r.Stop(t); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
