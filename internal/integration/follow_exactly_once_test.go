package integration

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// laggingLeaders are follow.Leaders that commit step more records of every
// partition at each read, up to end (or the partition's cap): they lag the
// topic and catch up read by read. Safe for concurrent use.
type laggingLeaders struct {
	mu   sync.Mutex
	step int64
	end  int64
	caps map[int32]int64
	at   map[sluice.TopicPartition]int64
	// early: records a graph processed at or past the leaders' offset.
	early []string
}

func newLaggingLeaders(step, end int64, caps map[int32]int64) *laggingLeaders {
	return &laggingLeaders{step: step, end: end, caps: caps, at: map[sluice.TopicPartition]int64{}}
}

func (l *laggingLeaders) Committed(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[sluice.TopicPartition]int64, len(tps))
	for _, tp := range tps {
		top := l.end
		if c, ok := l.caps[tp.Partition]; ok {
			top = c
		}
		l.at[tp] = min(l.at[tp]+l.step, top)
		out[tp] = l.at[tp]
	}
	return out, nil
}

// saw records r as processed, and as early when the leaders had not
// committed it.
func (l *laggingLeaders) saw(r sluice.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lead := l.at[sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}]; r.Offset >= lead {
		l.early = append(l.early, fmt.Sprintf("%d@%d (leaders at %d)", r.Partition, r.Offset, lead))
	}
}

func (l *laggingLeaders) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.early {
		if i == 5 {
			t.Errorf("... %d records processed before the leaders committed them", len(l.early))
			break
		}
		t.Errorf("processed before the leaders committed it: %s", e)
	}
}

// followedFanOut is eosFanOut behind a check that the leaders committed
// each record before it is processed: every input record has the two
// outputs "<partition>-<offset>-a" and "-b".
func followedFanOut(l *laggingLeaders, produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		outs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]sluice.Message, error) {
			l.saw(r)
			id := fmt.Sprintf("%d-%d", r.Partition, r.Offset)
			return []sluice.Message{{Key: r.Key, Value: []byte(id + "-a")}, {Key: r.Key, Value: []byte(id + "-b")}}, nil
		})
		return produce(outs)
	}
}

// startFollower starts a follower of leaders over the exactly-once member
// name of e on client c (transactional id txnID), reading the leaders
// every 20ms, with a small in-flight budget (WithMaxInFlight(10)) and
// opts.
func (e *eosCase) startFollower(t *testing.T, c txnClient, leaders *laggingLeaders, name, txnID string, opts ...pipeline.Option) *consumer {
	t.Helper()
	src, produce := c.member(t, e.b, e.group, e.in, txnID)
	f, err := follow.New(src, leaders, follow.WithInterval(20*time.Millisecond), follow.WithLogger(followLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	return startConsumer(t, name, f, followedFanOut(leaders, produce(e.out)),
		append([]pipeline.Option{pipeline.WithMaxInFlight(10), eosQueue}, opts...)...)
}

// TestFollowExactlyOnceLibrdkafkaStoppedLeader is follow's
// TestFollowExactlyOnceStoppedLeader on the librdkafka source: a follower
// over an exactly-once librdkafka source (a transactional producer bound
// to it), a small in-flight budget and commits due every 50ms. The
// leaders of partition 3 stop at 50, those of the others committed
// everything: the partitions the leaders released are processed to their
// ends and committed exactly, their outputs committed once each, while
// partition 3 waits at 50 (none of its outputs past 49 committed); Run
// stops with nil.
func TestFollowExactlyOnceLibrdkafkaStoppedLeader(t *testing.T) {
	t.Parallel()
	const parts, perPartition, stuckAt = 4, 200, 50
	e := newEOSCase(t, kafkatest.NewBroker(t), "folrdstuck", parts, perPartition)
	leaders := newLaggingLeaders(perPartition, perPartition, map[int32]int64{3: stuckAt})
	a := e.startFollower(t, librdkafkaTxn, leaders, "A", "folrdstuck-A")
	want := map[int32]int64{0: perPartition, 1: perPartition, 2: perPartition, 3: stuckAt}
	waitFor(t, fmt.Sprintf("the follower committing %v", want), func() bool {
		return maps.Equal(e.b.Committed(t, e.group, e.in), want)
	}, a)
	a.stop(t)
	if c := e.b.Committed(t, e.group, e.in); !maps.Equal(c, want) {
		t.Fatalf("committed %v after the stop, want %v", c, want)
	}
	leaders.check(t)
	checkExactlyOnce(t, e.b, e.out, parts, want)
}

// TestFollowExactlyOnceLibrdkafkaSaturated is follow's
// TestFollowExactlyOnceSaturated on the librdkafka source: the leaders
// lag (each read commits 29 more records of every partition) and a tiny
// in-flight budget keeps the runtime saturated. Every record's two
// outputs are committed exactly once, never before the leaders committed
// the record, the committed offsets reach the ends, and Run stops with
// nil.
func TestFollowExactlyOnceLibrdkafkaSaturated(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 6, 300
	e := newEOSCase(t, kafkatest.NewBroker(t), "folrdsat", parts, perPartition)
	hw := e.hw(t)
	leaders := newLaggingLeaders(29, perPartition, nil)
	a := e.startFollower(t, librdkafkaTxn, leaders, "A", "folrdsat-A")
	e.finish(t, hw, a)
	leaders.check(t)
}

// TestFollowExactlyOnceRewindWhileHolding: a follower over an
// exactly-once source on each client, its leaders lagging (each read
// commits 13 more records of every partition), so that it holds records
// of every partition most of the time. A transaction's commit fails
// mid-stream (kfake answers EndTxn(commit) with UNKNOWN_SERVER_ERROR): the
// transactional group beneath the follower aborts, rewinds the partitions
// with records in it and tells the follower, which drops what it holds of
// them. The member goes on to the end of the input; every input's two
// outputs are committed exactly once, never before the leaders committed
// the record, and the committed offsets reach the high watermarks.
func TestFollowExactlyOnceRewindWhileHolding(t *testing.T) {
	t.Parallel()
	for _, c := range txnClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const parts, perPartition = 4, 1500
			name := "folrw-" + c.name
			e := newEOSCase(t, kafkatest.NewKfake(t), name, parts, perPartition)
			hw := e.hw(t)
			leaders := newLaggingLeaders(13, perPartition, nil)
			rec := newCommitRecovery()
			a := e.startFollower(t, c, leaders, "A", name+"-A", pipeline.WithHooks(rec))
			e.waitMidStream(t, perPartition, a)
			failNextCommit(t, e.b, name+"-A")
			rec.waitRecovered(t, a, "failed commit")
			e.finish(t, hw, a)
			leaders.check(t)
		})
	}
}

// TestFollowExactlyOnceMemberJoins: a follower over an exactly-once source
// on each client, its leaders lagging (each read commits 11 more records
// of every partition). Mid-stream a second such member joins the group
// (its own transactional id), and later the first one leaves: each
// rebalance revokes partitions whose records the followers hold (dropped)
// and whose transaction commits at the revoke. Every input's two outputs
// are committed exactly once, never before the leaders committed the
// record, and the committed offsets reach the high watermarks.
func TestFollowExactlyOnceMemberJoins(t *testing.T) {
	t.Parallel()
	for _, c := range txnClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const parts, perPartition = 4, 2000
			name := "foljoin-" + c.name
			e := newEOSCase(t, kafkatest.NewBroker(t), name, parts, perPartition)
			hw := e.hw(t)
			leaders := newLaggingLeaders(11, perPartition, nil)
			a := e.startFollower(t, c, leaders, "A", name+"-A")
			e.waitMidStream(t, perPartition, a)
			b := e.startFollower(t, c, leaders, "B", name+"-B")
			waitFor(t, "the group committing half the input", func() bool {
				n, k := committedSum(t, e.b, e.group, e.in)
				return k == parts && n >= parts*perPartition/2
			}, a, b)
			a.stop(t)
			e.finish(t, hw, b)
			leaders.check(t)
		})
	}
}
