package integration

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
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
	inner := slog.DiscardHandler
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

// newWatchedSource is newSourceWith committing only at revokes and at
// shutdown, with librdkafka's protocol debug lines going to log.
func newWatchedSource(t *testing.T, b *kafkatest.Broker, group, topic, clientID string, log sentLog, overrides map[string]any) *source.Source {
	t.Helper()
	ov := map[string]any{
		"client.id":                clientID,
		"reconnect.backoff.max.ms": 500,
		"debug":                    "protocol",
	}
	maps.Copy(ov, overrides)
	src, err := source.NewSource(source.Config{
		GroupConfig: sluice.GroupConfig{
			Brokers: b.Addrs(), Group: group, Topics: []string{topic},
			CommitInterval: time.Hour, Logger: slog.New(log),
		},
		Overrides: ov,
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// refuseCommits makes the broker answer the OffsetCommit requests of
// group with code for every partition once armed is set: the first one,
// or every one if persistent. refused is closed at the first; later
// commits reach the broker as usual unless persistent.
func refuseCommits(b *kafkatest.Broker, group string, armed *atomic.Bool, code int16, persistent bool) (refused chan struct{}) {
	refused = make(chan struct{})
	var done atomic.Bool
	controlCommits(b, func(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		if !armed.Load() || req.Group != group || (done.Load() && !persistent) {
			return nil
		}
		if !done.Swap(true) {
			close(refused)
		}
		return refusal(req, code)
	})
	return refused
}

// wantRefused fails t at once unless refused is closed: a commit of A
// was answered code, as the scenario needs.
func wantRefused(t *testing.T, refused <-chan struct{}, code string) {
	t.Helper()
	select {
	case <-refused:
	default:
		t.Fatalf("no commit of A was answered %s: the scenario did not happen", code)
	}
}

// holdJoin makes the broker hold the first JoinGroup of member (once
// armed is set; nil: at once) until unhold: held is closed when it
// arrives. The test's end unholds it.
func holdJoin(t *testing.T, b *kafkatest.Broker, member string, armed *atomic.Bool) (held chan struct{}, unhold func()) {
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	unhold = func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unhold)
	b.Cluster().ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if (armed == nil || armed.Load()) && r.(*kmsg.JoinGroupRequest).MemberID == member {
			holdOnce.Do(func() {
				close(held)
				b.Cluster().SleepControl(func() { <-release })
			})
		}
		return nil, nil, false // then the broker answers as usual
	})
	return held, unhold
}

// releaseWhenSent arms log and calls unhold once the request log waits
// for is on the wire (behind the held JoinGroup), or a's Run returned
// without sending it.
func releaseWhenSent(log sentLog, a *consumer, unhold func()) {
	log.arm()
	go func() {
		select {
		case <-log.sent:
		case <-a.Done():
		}
		unhold()
	}()
}

// refusal answers every partition of req with code.
func refusal(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
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
	src := newWatchedSource(t, b, group, topic, "A", log, map[string]any{
		"topic.metadata.refresh.interval.ms": 100, "heartbeat.interval.ms": 100, "session.timeout.ms": 20000,
	})
	a := startConsumer(t, "A", src, countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)
	if c := b.Committed(t, group, topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}
	aID := memberID(t, b, group, "A")

	var armed atomic.Bool
	refused := refuseCommits(b, group, &armed, kerr.IllegalGeneration.Code, false)
	held, unhold := holdJoin(t, b, aID, nil)

	armed.Store(true)
	if _, err := admin(t, b).CreatePartitions(t.Context(), 2, topic); err != nil {
		t.Fatal(err)
	}
	waitChan(t, held, "A's JoinGroup for the added partitions", a)
	a.stillRunning(t, "the held JoinGroup")

	// The JoinGroup is released once the final commit is on the wire
	// behind it (or Run returned without one).
	releaseWhenSent(log, a, unhold)
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
	wantRefused(t, refused, "ILLEGAL_GENERATION")
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

// generationRefusal is a group protocol of librdkafka and the error its
// coordinator answers a commit of a generation or member epoch it has
// left.
type generationRefusal struct {
	protocol string // partition.assignment.strategy, or "consumer" (KIP-848)
	err      *kerr.Error
}

var generationRefusals = []generationRefusal{
	{"cooperative-sticky", kerr.IllegalGeneration},
	{"range", kerr.IllegalGeneration},
	{"consumer", kerr.StaleMemberEpoch},
}

func (g generationRefusal) overrides() map[string]any {
	if g.protocol == "consumer" {
		return map[string]any{"group.protocol": "consumer"}
	}
	return map[string]any{
		"partition.assignment.strategy": g.protocol,
		"heartbeat.interval.ms":         100,
		"session.timeout.ms":            20000,
	}
}

// TestFinalCommitGenerationRefusedSteady: A has processed every record
// and committed nothing when it is stopped with no rebalance in flight,
// and its final commit is answered ILLEGAL_GENERATION (classic
// protocols) or STALE_MEMBER_EPOCH (KIP-848), once or on every commit.
// With the classic protocol librdkafka then declares the assignment lost,
// which ends the retry: Run returns nil promptly and no commit reaches
// the broker after the refused one. In every case Run returns nil within
// CloseTimeout, nothing past what A processed is ever committed, and the
// group keeps either nothing or exactly the high watermarks. With KIP-848
// the member keeps its partitions across the epoch change, so a single
// STALE_MEMBER_EPOCH is retried and the group keeps the high watermarks;
// a persistent one is retried until the commit timeout (2/5 of
// CloseTimeout) nears.
func TestFinalCommitGenerationRefusedSteady(t *testing.T) {
	t.Parallel()
	for _, g := range generationRefusals {
		for _, persistent := range []bool{false, true} {
			name := g.protocol + "/once"
			if persistent {
				name = g.protocol + "/persistent"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				refusedSteady(t, g, persistent)
			})
		}
	}
}

func refusedSteady(t *testing.T, g generationRefusal, persistent bool) {
	const parts, perPartition = 4, 200
	slug := strings.ToLower(strings.ReplaceAll(g.err.Message, "_", "-"))
	r := newFaultRun(t, kafkatest.NewKfake(t), fmt.Sprintf("fgen-steady-%s-%s-%t", g.protocol, slug, persistent), parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	log := newSentLog(t, "OffsetCommit")
	aObs := newCommitLog(b, group, topic)
	src := newWatchedSource(t, b, group, topic, "A", log, g.overrides())
	a := startConsumer(t, "A", src, countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)

	var armed atomic.Bool
	armed.Store(true)
	refused := refuseCommits(b, group, &armed, g.err.Code, persistent)
	before := r.watch.Requests()
	took, err := a.stopTimed(t)
	left := b.Committed(t, group, topic)
	after := r.watch.Requests() - before
	errs := aObs.syncErrors()
	var first error
	if len(errs) > 0 {
		first = errs[0]
	}
	t.Logf("A stopped in %v: Run = %v; %d synchronous commits failed, the first with %v; %d commits reached the broker after the refused one; the group kept %v",
		took, err, len(errs), first, after, left)
	r.watch.logIfFailed(t)
	if err != nil {
		t.Errorf("A: Run = %v, want nil", err)
	}
	wantRefused(t, refused, g.err.Message)
	if took > source.DefaultCloseTimeout {
		t.Errorf("A took %v to stop, more than CloseTimeout (%v)", took, source.DefaultCloseTimeout)
	}
	if g.protocol != "consumer" {
		// librdkafka declared the assignment lost: nothing to retry.
		if took > 2*time.Second {
			t.Errorf("A took %v to stop after librdkafka lost its assignment, want a prompt return", took)
		}
		if after != 0 {
			t.Errorf("%d commit requests reached the broker after librdkafka declared the assignment lost", after)
		}
	}
	r.watch.check(t)
	if len(left) != 0 && !maps.Equal(left, hw) {
		t.Errorf("the group kept %v, want nothing or exactly the high watermarks %v", left, hw)
	}
	if persistent && len(left) != 0 {
		t.Errorf("every commit was refused, yet the group kept %v", left)
	}
	if g.protocol == "consumer" && !persistent && !maps.Equal(left, hw) {
		// KIP-848: the member keeps its partitions across an epoch
		// change, so the retry commits them.
		t.Errorf("one commit was refused with %s, yet the group kept %v, want the high watermarks %v", g.err.Message, left, hw)
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

// TestFinalCommitIllegalGenerationPartitionsMoving: A (librdkafka,
// cooperative-sticky) owns every partition and has processed every record
// when B joins; A's JoinGroup for that rebalance is held at the broker, A
// is stopped meanwhile, and its final commit, written behind the held
// JoinGroup, is answered ILLEGAL_GENERATION. The rebalance gives some of
// A's partitions to B (after A revokes them). A commits their final
// offsets in the revoke, and the final commit's retry carries only the
// partitions A kept: no commit of A reaches the broker for a partition
// once B owns it, and B processes no record again. Run returns nil, and
// once B has taken everything the group commits the high watermarks.
func TestFinalCommitIllegalGenerationPartitionsMoving(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 200
	r := newFaultRun(t, kafkatest.NewKfake(t), "fgen-moving", parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw
	classic := map[string]any{"heartbeat.interval.ms": 100, "session.timeout.ms": 20000}

	log := newSentLog(t, "OffsetCommit")
	aObs := newCommitLog(b, group, topic)
	a := startConsumer(t, "A", newWatchedSource(t, b, group, topic, "A", log, classic),
		countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)
	aID := memberID(t, b, group, "A")

	// Every commit of A that reaches the broker is checked against what B
	// owns (B's ownership as its hooks report it: a partition's owner
	// changes at the broker before B's hook runs, so this only sees a
	// commit of A that comes after B's hook).
	bObs := newCommitLog(b, group, topic)
	var mu sync.Mutex
	var aCommits, overCommits []string
	var armed atomic.Bool
	refused := make(chan struct{})
	var refuseOnce sync.Once
	controlCommits(b, func(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		if !armed.Load() || req.MemberID != aID {
			return nil
		}
		owned := bObs.ownedSet()
		refuse := false
		refuseOnce.Do(func() { refuse = true })
		mu.Lock()
		line := fmt.Sprintf("gen %d:", req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %d@%d", rp.Partition, rp.Offset)
				if owned[rp.Partition] && !refuse {
					overCommits = append(overCommits, fmt.Sprintf("A committed partition %d at %d (generation %d) while B owned it", rp.Partition, rp.Offset, req.Generation))
				}
			}
		}
		if refuse {
			line += " (answered ILLEGAL_GENERATION)"
		}
		aCommits = append(aCommits, line)
		mu.Unlock()
		if !refuse {
			return nil
		}
		close(refused)
		return refusal(req, kerr.IllegalGeneration.Code)
	})
	held, unhold := holdJoin(t, b, aID, &armed)

	armed.Store(true)
	bSeen := newOffsets(hw)
	bc := startConsumer(t, "B", newSourceWith(t, b, group, topic, "B", 50*time.Millisecond, nil),
		countingBuilder("B", r.es, bSeen, nil), pipeline.WithHooks(bObs))
	waitChan(t, held, "A's JoinGroup for B's rebalance", a, bc)

	releaseWhenSent(log, a, unhold)
	took, err := a.stopTimed(t)
	waitGroupAt(t, b, group, topic, hw, bc)
	bc.stop(t)

	mu.Lock()
	t.Logf("A stopped in %v: Run = %v; A's commits at the broker: %q; B processed %d records", took, err, aCommits, bSeen.total.Load())
	for _, s := range overCommits {
		t.Error(s)
	}
	mu.Unlock()
	if err != nil {
		t.Errorf("A: Run = %v, want nil", err)
	}
	wantRefused(t, refused, "ILLEGAL_GENERATION")
	checkCommittedEquals(t, b, group, topic, hw)
	// A processed every record before it stopped and committed every
	// partition's final offset, the revoked ones in their revoke: B
	// starts at the high watermarks and redoes nothing.
	if n := bSeen.total.Load(); n != 0 {
		t.Errorf("B processed %d records, want 0: A's final offsets of the partitions revoked during its retry were not committed", n)
	}
}
