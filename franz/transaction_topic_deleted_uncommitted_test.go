package franz

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Exactly-once on topics orders and stays, the client speaking the
// protocol of Kafka 3.9: orders is deleted (not recreated) while its
// first record is in flight, before the group committed anything on it.
// The transaction that follows cannot commit orders' offset and aborts;
// its rewind finds orders gone (no committed offset, and no reset offset
// for a topic the broker does not know). Run must go on: stays is
// consumed on, and Run returns nil when stopped.
func TestTransactionalSourceTopicDeletedUncommittedKafka39(t *testing.T) {
	testTopicDeletedUncommitted(t, kgo.MaxVersions(kversion.V3_9_0()))
}

// As TestTransactionalSourceTopicDeletedUncommittedKafka39, with the
// client's own protocol versions.
func TestTransactionalSourceTopicDeletedUncommitted(t *testing.T) {
	testTopicDeletedUncommitted(t)
}

func testTopicDeletedUncommitted(t *testing.T, opts ...kgo.Opt) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "orders", 1)
	b.CreateTopic(t, "stays", 1)
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")})
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders", "stays"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second, Logger: kafkatest.Logger(t)}, Opts: opts})
	if err != nil {
		t.Fatal(err)
	}
	end := txnEnd(t, b, src)
	g, build := newHeldGraph("old-0", func(r sluice.Record) string {
		return fmt.Sprintf("%s:%s@%d", r.Topic, r.Value, r.Offset)
	}, end)
	cancel, done := startRun(t, src, build)
	deadline := time.After(kafkadriver.RecreateWait)
	await := func(v string) {
		t.Helper()
		for {
			select {
			case got := <-g.seen:
				if got == v {
					return
				}
			case err := <-done:
				t.Fatalf("Run returned %v while %s was awaited", err, v)
			case <-deadline:
				t.Fatalf("%s not processed within %v", v, kafkadriver.RecreateWait)
			}
		}
	}
	g.waitHeld(t, deadline)
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer dcancel()
	if resp, err := adm.DeleteTopics(dctx, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("deleting orders: %v %v", err, resp.Error())
	}
	close(g.release)
	await("stays:stay-0@0")
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-1")})
	await("stays:stay-1@1")
	stopRun(t, cancel, done)
}
