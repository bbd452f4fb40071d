package franz

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("SLUICE_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
}

// newTestSource returns a franz source for group/topic with test timings
// (fast heartbeats and commits); opts are applied after them.
func newTestSource(t testing.TB, b *kafkatest.Broker, group, topic string, opts ...kgo.Opt) *Source {
	t.Helper()
	src, err := NewSource(Config{
		Brokers:        b.Addrs(),
		Group:          group,
		Topics:         []string{topic},
		CommitInterval: 50 * time.Millisecond,
		Logger:         testLogger(t),
		Opts:           append([]kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}, opts...),
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// franzDriver runs the source conformance suite against the franz source
// on the embedded broker.
type franzDriver struct{ b *kafkatest.Broker }

func (d franzDriver) CreateTopic(t *testing.T, topic string, partitions int32) {
	d.b.CreateTopic(t, topic, partitions)
}

func (d franzDriver) Produce(t *testing.T, topic string, recs ...sluice.Record) {
	d.b.Produce(t, topic, recs...)
}

func (d franzDriver) NewSource(t *testing.T, group, topic string) sluice.Source {
	return newTestSource(t, d.b, group, topic)
}

func (d franzDriver) Committed(t *testing.T, group, topic string) map[int32]int64 {
	return d.b.Committed(t, group, topic)
}

// Evict makes the coordinator reject the group's heartbeats with
// ILLEGAL_GENERATION, which kgo treats as a fatal group error (its
// assignment is lost: OnPartitionsLost), and its joins, so that it cannot
// come back until readmit. kfake answers the faulted requests with the
// error as a real coordinator would for a member it expired.
func (d franzDriver) Evict(t *testing.T, group, _ string) (readmit func()) {
	cluster, ok := d.b.Kfake()
	if !ok {
		t.Skip("evicting a member takes kfake's fault injection (rejected heartbeats and joins); Apache Kafka has no such control")
	}
	faults := cluster.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
	)
	t.Cleanup(faults.Remove)
	return faults.Remove
}

var _ sourcetest.Evicter = franzDriver{}

// TestConformance runs testkit/sourcetest, whose scenarios assert the
// same exact commits for every source (the fake, the librdkafka source).
func TestConformance(t *testing.T) {
	sourcetest.Run(t, franzDriver{kafkatest.NewBroker(t)})
}
