package franz

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// The poll loop loses topic a's partitions (topicsGone): a/0 had records
// in the open transaction, so the exactly-once Group aborts it and rewinds
// b/0, which had records in it too; the rewind finds b's topic gone too
// and marks it (kgoTxn.Rewind marks r.gone). b/0 then has no graph and
// its records are dropped until the poll loop loses it: the mark made
// while topicsGone ran must survive it (or b/0 be lost at once), never be
// cleared unhandled. Trials, because a map entry added during a range
// over the map may or may not be visited.
func TestTopicGoneMarkedWhileLosingAnotherIsKept(t *testing.T) {
	const trials = 64
	for i := range trials {
		r, eg, stop := goneRunner(t)
		a0 := sluice.TopicPartition{Topic: "a", Partition: 0}
		b0 := sluice.TopicPartition{Topic: "b", Partition: 0}
		r.core.Assigned([]sluice.TopicPartition{a0, b0})
		eg.Deliver(a0, []sluice.Record{{Topic: "a", Partition: 0, Offset: 5}})
		eg.Deliver(b0, []sluice.Record{{Topic: "b", Partition: 0, Offset: 7}})
		r.gone.add("a") // the poll saw UNKNOWN_TOPIC_ID for a
		r.topicsGone()
		owned, marked := r.core.Owns(b0), r.gone["b"]
		err := eg.Err()
		stop()
		if err != nil {
			t.Fatalf("trial %d: Group.Err = %v, want nil", i, err)
		}
		if owned && !marked {
			t.Fatalf("trial %d: after topicsGone b/0 is still owned (no graph, its records dropped) and b is no longer marked gone: nothing will lose it", i)
		}
	}
}

// goneRunner returns a runner whose Group is an exactlyonce.Group over a
// group that does nothing, with a Txn whose Rewind finds topic b gone and
// marks it in the runner's gone topics as kgoTxn.Rewind does, and a
// function that closes its client.
func goneRunner(t *testing.T) (*runner, *exactlyonce.Group, func()) {
	t.Helper()
	s, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"a", "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	txn := &markingTxn{}
	eg := exactlyonce.Wrap(context.Background(), nopGroup{}, txn, exactlyonce.Config{})
	r := newRunner(s, eg)
	txn.gone = &r.gone
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	r.cl = cl
	return r, eg, cl.Close
}

// markingTxn is an exactlyonce.Txn whose Rewind reports the partitions of
// topic b gone and marks b in gone, as kgoTxn.Rewind does.
type markingTxn struct{ gone *goneTopics }

func (*markingTxn) Begin() error                                  { return nil }
func (*markingTxn) Commit(context.Context, []sluice.Offset) error { return nil }
func (*markingTxn) Abort(context.Context) error                   { return nil }
func (m *markingTxn) Rewind(_ context.Context, tps []sluice.TopicPartition) ([]sluice.TopicPartition, error) {
	var gone []sluice.TopicPartition
	for _, tp := range tps {
		if tp.Topic == "b" {
			gone = append(gone, tp)
			m.gone.add(tp.Topic)
		}
	}
	return gone, nil
}

// nopGroup is a runtime group that runs nothing.
type nopGroup struct{}

func (nopGroup) Assign([]sluice.TopicPartition) error                { return nil }
func (nopGroup) Revoke([]sluice.TopicPartition) []sluice.Offset      { return nil }
func (nopGroup) Lose([]sluice.TopicPartition)                        {}
func (nopGroup) Shutdown() []sluice.Offset                           { return nil }
func (nopGroup) Unfinished() []sluice.TopicPartition                 { return nil }
func (nopGroup) DrainTimeout() time.Duration                         { return time.Second }
func (nopGroup) MaxInFlight() int                                    { return 100 }
func (nopGroup) MaxInFlightBytes() int64                             { return 1 << 20 }
func (nopGroup) Deliver(sluice.TopicPartition, []sluice.Record) bool { return false }
func (nopGroup) Resumable() []sluice.TopicPartition                  { return nil }
func (nopGroup) Wake() <-chan struct{}                               { return nil }
func (nopGroup) Offsets() []sluice.Offset                            { return nil }
func (nopGroup) Polled()                                             {}
func (nopGroup) Joined()                                             {}
func (nopGroup) Committed([]sluice.Offset, time.Duration, error)     {}
func (nopGroup) HighWatermark(sluice.TopicPartition, int64)          {}
