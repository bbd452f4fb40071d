package integration

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// sentLog is a slog.Handler that watches librdkafka's "protocol" debug
// lines for the one it writes once a request of a kind is on the wire
// ("Sent OffsetCommitRequest (v..."), closing sent at the first such line
// after arm; every line then goes on to the test's logger.
type sentLog struct {
	*sentState
	inner slog.Handler
}

type sentState struct {
	line  string
	armed atomic.Bool
	once  sync.Once
	sent  chan struct{}
}

func newSentLog(t *testing.T, request string) sentLog {
	var inner slog.Handler = discardHandler{}
	if l := kafkatest.Logger(t); l != nil {
		inner = l.Handler()
	}
	return sentLog{sentState: &sentState{line: "Sent " + request + "Request", sent: make(chan struct{})}, inner: inner}
}

// arm makes the next matching line close sent.
func (s *sentState) arm() { s.armed.Store(true) }

func (h sentLog) Enabled(context.Context, slog.Level) bool { return true }

func (h sentLog) Handle(ctx context.Context, r slog.Record) error {
	if h.armed.Load() && strings.Contains(r.Message, h.line) {
		h.once.Do(func() { close(h.sent) })
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h sentLog) WithAttrs(as []slog.Attr) slog.Handler {
	return sentLog{sentState: h.sentState, inner: h.inner.WithAttrs(as)}
}

func (h sentLog) WithGroup(name string) slog.Handler {
	return sentLog{sentState: h.sentState, inner: h.inner.WithGroup(name)}
}

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }

// newWatchedSource is newSourceWith committing only at revokes and at
// shutdown, with librdkafka's protocol debug lines going to log.
func newWatchedSource(t *testing.T, b *kafkatest.Broker, group, topic, clientID string, log sentLog, overrides map[string]any) *source.Source {
	t.Helper()
	ov := map[string]any{
		"heartbeat.interval.ms":    100,
		"session.timeout.ms":       20000,
		"client.id":                clientID,
		"reconnect.backoff.max.ms": 500,
		"debug":                    "protocol",
	}
	maps.Copy(ov, overrides)
	src, err := source.NewSource(source.Config{
		Brokers: b.Addrs(), Group: group, Topics: []string{topic},
		CommitInterval: time.Hour, Overrides: ov, Logger: slog.New(log),
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// refuseCommitOnce makes the broker answer the first OffsetCommit of
// member with ILLEGAL_GENERATION for every partition once armed is set;
// refused is closed then. Later commits reach the broker as usual.
func refuseCommitOnce(b *kafkatest.Broker, member string, armed *atomic.Bool) (refused chan struct{}) {
	refused = make(chan struct{})
	var done atomic.Bool
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.OffsetCommitRequest)
		if !armed.Load() || req.MemberID != member || done.Swap(true) {
			b.Cluster().KeepControl()
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.IllegalGeneration.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		close(refused)
		return resp, nil, true
	})
	return refused
}

// TestFinalCommitIllegalGenerationDuringRebalance: A (librdkafka,
// cooperative-sticky) has processed every record and committed nothing
// (its background interval is an hour) when partitions are added to its
// topic: it rejoins, and the broker holds its JoinGroup. A is stopped
// meanwhile; its final commit is written behind the held JoinGroup, so
// it carries the generation the group is leaving, and the broker answers
// it ILLEGAL_GENERATION once the JoinGroup is released. librdkafka is
// rebalancing then and keeps the partitions; the final commit is
// retried once the rebalance completes. Run returns nil and the group
// commits exactly what A processed: the high watermarks.
func TestFinalCommitIllegalGenerationDuringRebalance(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 200
	r := newFaultRun(t, kafkatest.NewKfake(t), "fgen-rebalance", parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	log := newSentLog(t, "OffsetCommit")
	aObs := newCommitLog(b, group, topic)
	src := newWatchedSource(t, b, group, topic, "A", log, map[string]any{"topic.metadata.refresh.interval.ms": 100})
	a := startConsumer(t, "A", src, countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)
	if c := b.Committed(t, group, topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}
	aID := memberID(t, b, group, "A")

	var armed atomic.Bool
	refused := refuseCommitOnce(b, aID, &armed)
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unhold)
	b.Cluster().ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if r.(*kmsg.JoinGroupRequest).MemberID == aID {
			holdOnce.Do(func() {
				close(held)
				b.Cluster().SleepControl(func() { <-release })
			})
		}
		return nil, nil, false // then the broker answers as usual
	})

	armed.Store(true)
	if _, err := admin(t, b).CreatePartitions(t.Context(), 2, topic); err != nil {
		t.Fatal(err)
	}
	waitChan(t, held, "A's JoinGroup for the added partitions", a)
	a.stillRunning(t, "the held JoinGroup")

	// The JoinGroup is released once the final commit is on the wire
	// behind it (or Run returned without one).
	log.arm()
	go func() {
		select {
		case <-log.sent:
		case <-a.Done():
		}
		unhold()
	}()
	took, err := a.stopTimed(t)
	left := b.Committed(t, group, topic)
	t.Logf("A stopped in %v: Run = %v; sync commit errors %v; %d losses; the group kept %v",
		took, err, aObs.syncErrors(), aObs.lost.Load(), left)
	r.watch.mu.Lock()
	t.Logf("commit requests that reached the broker after the refused one: %q", r.watch.history)
	r.watch.mu.Unlock()
	if err != nil {
		t.Errorf("A: Run = %v, want nil", err)
	}
	select {
	case <-refused:
	default:
		t.Fatalf("no commit of A was answered ILLEGAL_GENERATION: the scenario did not happen")
	}
	if !anyHasCode(aObs.syncErrors(), kerr.IllegalGeneration) {
		t.Errorf("A's synchronous commit errors %v: none is ILLEGAL_GENERATION", aObs.syncErrors())
	}
	if n := aObs.lost.Load(); n != 0 {
		t.Errorf("A lost %d partitions: librdkafka keeps them through a rebalance's ILLEGAL_GENERATION", n)
	}
	r.watch.check(t)
	if !maps.Equal(left, hw) {
		t.Errorf("the group kept %v after A's shutdown, want exactly the high watermarks %v (what A processed)", left, hw)
	}
	r.seen.checkTimes(t, once)
}

// TestFinalCommitIllegalGenerationSteady: A (librdkafka, cooperative)
// has processed every record and committed nothing when it is stopped
// with no rebalance in flight, and its final commit is answered
// ILLEGAL_GENERATION once. librdkafka then declares the assignment lost.
// Run returns nil promptly (the loss ends the retry: no wait for a
// rebalance that never comes), and nothing is committed after the loss:
// the group keeps nothing.
func TestFinalCommitIllegalGenerationSteady(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 200
	r := newFaultRun(t, kafkatest.NewKfake(t), "fgen-steady", parts, perPartition)
	b, group, topic := r.b, r.group, r.topic

	log := newSentLog(t, "OffsetCommit")
	aObs := newCommitLog(b, group, topic)
	src := newWatchedSource(t, b, group, topic, "A", log, nil)
	a := startConsumer(t, "A", src, countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)
	aID := memberID(t, b, group, "A")

	var armed atomic.Bool
	armed.Store(true)
	refused := refuseCommitOnce(b, aID, &armed)
	before := r.watch.Requests()
	took, err := a.stopTimed(t)
	left := b.Committed(t, group, topic)
	t.Logf("A stopped in %v: Run = %v; sync commit errors %v; %d losses; the group kept %v",
		took, err, aObs.syncErrors(), aObs.lost.Load(), left)
	r.watch.logIfFailed(t)
	if err != nil {
		t.Errorf("A: Run = %v, want nil", err)
	}
	select {
	case <-refused:
	default:
		t.Fatalf("no commit of A was answered ILLEGAL_GENERATION: the scenario did not happen")
	}
	// The default CloseTimeout is far longer; the loss ends the retry
	// within a few of its polls.
	if took > 5*time.Second {
		t.Errorf("A took %v to stop after its final commit was refused, want a prompt return", took)
	}
	if n := r.watch.Requests() - before; n != 0 {
		t.Errorf("%d commit requests reached the broker after the refused one (after librdkafka declared the assignment lost)", n)
	}
	if len(left) != 0 {
		t.Errorf("the group kept %v, want nothing: the only commit was refused", left)
	}
}

// waitChan waits until ch is closed, failing t after wait or as soon as
// one of the consumers' Run returns.
func waitChan(t *testing.T, ch <-chan struct{}, what string, cs ...*consumer) {
	t.Helper()
	waitFor(t, what, func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}, cs...)
}
