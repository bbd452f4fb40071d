package source

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// commitSpy replaces a source's CommitOffsets: it commits for real and,
// from the first call on while hold is set, keeps the answer until
// release is closed, as a coordinator slow to answer does. It records
// every call and how many ran at once.
type commitSpy struct {
	release chan struct{}
	held    chan struct{} // closed when the first call starts being held

	mu        sync.Mutex
	hold      bool
	heldOnce  sync.Once
	calls     [][]kafka.TopicPartition
	active    int
	maxActive int
}

func newCommitSpy(hold bool) *commitSpy {
	return &commitSpy{release: make(chan struct{}), held: make(chan struct{}), hold: hold}
}

func (s *commitSpy) commit(c *kafka.Consumer, kos []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	s.mu.Lock()
	s.calls = append(s.calls, append([]kafka.TopicPartition(nil), kos...))
	s.active++
	s.maxActive = max(s.maxActive, s.active)
	hold := s.hold
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
	}()
	res, err := c.CommitOffsets(kos)
	if hold {
		s.heldOnce.Do(func() { close(s.held) })
		<-s.release
	}
	return res, err
}

func (s *commitSpy) snapshot() (calls [][]kafka.TopicPartition, maxActive int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]kafka.TopicPartition(nil), s.calls...), s.maxActive
}

func (s *commitSpy) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-s.held:
	case <-time.After(wait):
		t.Fatal("no commit was sent")
	}
}

// commitErrors returns the *sluice.CommitError of every failed commit g heard of,
// failing t for an error of another type.
func commitErrors(t *testing.T, g *fakeGroup) []*sluice.CommitError {
	t.Helper()
	var out []*sluice.CommitError
	g.with(func(f *fakeGroup) {
		for _, c := range f.commits {
			if c.err == nil {
				continue
			}
			var ce *sluice.CommitError
			if !errors.As(c.err, &ce) {
				t.Errorf("Committed(%v) error %v (%T), want a *sluice.CommitError", c.offs, c.err, c.err)
				continue
			}
			out = append(out, ce)
		}
	})
	return out
}

// Group.Offsets reports a partition's offset once, when it moves. A
// background commit that failed (the whole request, or one partition) is
// retried at the next interval, so an idle partition's progress reaches
// the broker while the source runs, not only at the next revoke or
// shutdown. The failures are reported as *sluice.CommitError of the interval
// commit, with their duration.
func TestFailedBackgroundCommitRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail func(kos []kafka.TopicPartition) ([]kafka.TopicPartition, error)
	}{
		{"request", func([]kafka.TopicPartition) ([]kafka.TopicPartition, error) {
			return nil, kafka.NewError(kafka.ErrRebalanceInProgress, "injected", false)
		}},
		{"partition", func(kos []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
			out := append([]kafka.TopicPartition(nil), kos...)
			for i := range out {
				out[i].Error = kafka.NewError(kafka.ErrRebalanceInProgress, "injected", false)
			}
			return out, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := topicIn(t, kafkatest.NewBroker(t), 1, 100)
			src := newSource(t, b, "g", "in", nil)
			var calls atomic.Int64
			src.commitOffsets = func(c *kafka.Consumer, kos []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
				if calls.Add(1) <= 3 {
					return tc.fail(kos)
				}
				return c.CommitOffsets(kos)
			}
			g, r := runFor(t, src, 100)
			// No record arrives after the first 100: Offsets reports 100
			// once; the interval commit must still get it to the broker
			// while the source runs.
			b.WaitCommitted(t, "g", "in", map[int32]int64{0: 100})
			if n := calls.Load(); n < 4 {
				t.Errorf("%d commits, want the 3 failures and a retry", n)
			}
			if err := r.stop(t); err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, b.HighWatermarks(t, "in"), g)
			errs := commitErrors(t, g)
			if len(errs) < 3 {
				t.Errorf("%d commit errors reported, want the 3 failures", len(errs))
			}
			for _, ce := range errs {
				if ce.Reason != "interval" || !strings.Contains(ce.Error(), "interval commit of [in/0@") {
					t.Errorf("commit error %q (reason %q), want one naming the interval commit of in/0", ce, ce.Reason)
				}
				var kerr kafka.Error
				if !errors.As(ce, &kerr) || kerr.Code() != kafka.ErrRebalanceInProgress {
					t.Errorf("commit error %v does not wrap the client's REBALANCE_IN_PROGRESS", ce)
				}
			}
			g.with(func(f *fakeGroup) {
				for _, c := range f.commits {
					if c.took <= 0 {
						t.Errorf("Committed(%v, %v, %v): want the commit's duration", c.offs, c.took, c.err)
					}
				}
			})
		})
	}
}

// runBehindHeldCommit runs a source of group "g" on topic "in" (one
// partition of 100 records) whose first commit stays unanswered until
// spy.release is closed, then has it deliver 100 more: a commit in
// flight, newer offsets ready. closeTimeout, when not 0, is the source's
// CloseTimeout.
func runBehindHeldCommit(t *testing.T, closeTimeout time.Duration) (*kafkatest.Broker, *Source, *commitSpy, *fakeGroup, *running) {
	t.Helper()
	b := topicIn(t, kafkatest.NewBroker(t), 1, 100)
	src := newSource(t, b, "g", "in", nil)
	if closeTimeout != 0 {
		src.cfg.CloseTimeout = closeTimeout
	}
	spy := newCommitSpy(true)
	src.commitOffsets = spy.commit
	g, r := runFor(t, src, 100)
	spy.waitHeld(t)
	b.Produce(t, "in", producertest.Input(1, 100, 100)...)
	g.waitUntil(t, wait, "the next 100 records", delivered(200))
	return b, src, spy, g, r
}

// One commit at a time: while the answer to a background commit is
// outstanding (librdkafka may be retrying it), intervals send nothing
// else, and the shutdown's final commit is sent only once that answer
// came, so it is the last commit the broker sees. Before, librdkafka's
// auto-committer sent newer offsets while it retried an older commit,
// which then landed last (TestFaultRetriedCommitDoesNotMoveBack in
// internal/integration).
func TestOneCommitInFlight(t *testing.T) {
	t.Parallel()
	b, _, spy, g, r := runBehindHeldCommit(t, 0)
	var calls int
	g.with(func(f *fakeGroup) { calls = f.offsetsCalls })
	g.waitUntil(t, wait, "three more intervals", func(f *fakeGroup) bool { return f.offsetsCalls >= calls+3 })
	if sent, _ := spy.snapshot(); len(sent) != 1 {
		t.Fatalf("%d commits sent while the first was unanswered, want 1: %v", len(sent), sent)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- r.stop(t) }()
	g.waitUntil(t, wait, "the shutdown's drain", func(f *fakeGroup) bool { return f.shutdowns == 1 })
	close(spy.release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run = %v", err)
	}
	sent, maxActive := spy.snapshot()
	if maxActive != 1 || len(sent) != 2 {
		t.Fatalf("commits sent %v, %d at once; want the held one, then the final one, one at a time", sent, maxActive)
	}
	if first, final := sent[0][0].Offset, sent[1][0].Offset; first > 100 || final != 200 {
		t.Errorf("commits of %d then %d, want at most 100 then the final 200", first, final)
	}
	checkCommitted(t, b, "g", "in")
	g.with(func(f *fakeGroup) {
		last := f.commits[len(f.commits)-1]
		if last.err != nil || len(last.offs) != 1 || last.offs[0].Next != 200 {
			t.Errorf("last Committed(%v, %v, %v), want the final commit of 200", last.offs, last.took, last.err)
		}
	})
}

// A final commit that cannot be sent within its share of CloseTimeout,
// because the commit before it is still unanswered, is not sent at all
// (it could land before the older one), and Run says so.
func TestFinalCommitNotSentBehindUnansweredCommit(t *testing.T) {
	t.Parallel()
	_, src, spy, g, r := runBehindHeldCommit(t, time.Second)

	err := r.stop(t)
	close(spy.release)
	waitBackground(t, src, wait)
	if err == nil || !strings.Contains(err.Error(), "final commit of [in/0@200] did not finish") ||
		!strings.Contains(err.Error(), "not sent: the earlier interval commit of [in/0@") {
		t.Errorf("Run = %v, want an error saying the final commit was not sent behind the interval commit", err)
	}
	if sent, maxActive := spy.snapshot(); len(sent) != 1 || maxActive != 1 {
		t.Errorf("commits sent %v (%d at once), want only the held one", sent, maxActive)
	}
	errs := commitErrors(t, g)
	if len(errs) != 1 || errs[0].Reason != "shutdown" {
		t.Errorf("commit errors %v, want the shutdown's", errs)
	}
}

// A revoke waits for the commit in flight before sending its own; when
// that one stays unanswered past the commit timeout, the revoke's commit
// is not sent (the partitions move on with the group's commit) and the
// poll loop goes on.
func TestRevokeCommitWaitsForCommitInFlight(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewBroker(t), 4, 50)
	srcA := newSource(t, b, "g", "in", nil)
	srcA.cfg.CloseTimeout = time.Second
	spy := newCommitSpy(true)
	srcA.commitOffsets = spy.commit
	a, ra := runFor(t, srcA, 200)
	// The held commit, sent before the revoke, lands after it.
	ra.tolerateClause(sourcetest.ClauseGiveUp)
	spy.waitHeld(t)

	bg := newFakeGroup()
	rb := start(t, newSource(t, b, "g", "in", nil), bg)
	a.waitUntil(t, wait, "A's revoke commit reported", func(f *fakeGroup) bool {
		return len(f.revokes) > 0 && len(f.commits) > 0
	})
	if sent, maxActive := spy.snapshot(); len(sent) != 1 || maxActive != 1 {
		t.Errorf("A sent %v (%d at once) by its revoke, want only the unanswered commit", sent, maxActive)
	}
	errs := commitErrors(t, a)
	if len(errs) != 1 || errs[0].Reason != "revoke" || !strings.Contains(errs[0].Error(), "not sent") {
		t.Errorf("A's commit errors %v, want the revoke's commit not sent", errs)
	}
	var polls int
	a.with(func(f *fakeGroup) { polls = f.polls })
	a.waitUntil(t, wait, "A polls again", func(f *fakeGroup) bool { return f.polls > polls })
	close(spy.release)

	// Once answered, the commits flow again: A's pending ones and B's
	// (B starts its partitions at the group's commit).
	b.WaitCommitted(t, "g", "in", b.HighWatermarks(t, "in"))
	if err := rb.stop(t); err != nil {
		t.Errorf("B: Run = %v", err)
	}
	if err := ra.stop(t); err != nil {
		t.Errorf("A: Run = %v", err)
	}
	if _, maxActive := spy.snapshot(); maxActive != 1 {
		t.Errorf("A had %d commits in flight at once, want 1", maxActive)
	}
	checkCommitted(t, b, "g", "in")
}

// A loss waits for the commit in flight that holds a lost partition
// before it returns to librdkafka (which then rejoins), so that commit
// cannot land after the next owner's: its outcome is handled inside the
// rebalance callback, before the poll loop goes on.
func TestLossWaitsForCommitInFlight(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewKfake(t), 2, 100)
	src := newSource(t, b, "g", "in", nil)
	spy := newCommitSpy(true)
	src.commitOffsets = spy.commit
	g := newFakeGroup()
	lostAt := make(chan int, 1)
	var once sync.Once
	g.onLose = func([]TP) {
		once.Do(func() {
			g.with(func(f *fakeGroup) { lostAt <- f.polls })
			spy.mu.Lock()
			spy.hold = false
			spy.mu.Unlock()
			close(spy.release) // the answer comes after the loss
		})
	}
	r := start(t, src, g)
	g.waitUntil(t, wait, "all records", delivered(200))
	spy.waitHeld(t)

	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: "g", Err: kerr.IllegalGeneration})
	var at int
	select {
	case at = <-lostAt:
	case <-time.After(wait):
		t.Fatal("the partitions were never lost")
	}
	g.waitUntil(t, wait, "the held commit's outcome", func(f *fakeGroup) bool { return len(f.commits) > 0 })
	g.with(func(f *fakeGroup) {
		if c := f.commits[0]; c.polls != at {
			t.Errorf("the commit in flight at the loss was handled after %d more polls, want inside the loss's callback", c.polls-at)
		}
	})
	g.waitUntil(t, wait, "re-assignment", func(f *fakeGroup) bool { return len(f.assigned) == 2 })
	// The loss kept what it had committed; the rest is delivered again
	// from there. Stop once each partition is committed to its end or
	// delivered to it since the re-assignment (the final commit then
	// takes it there).
	g.waitUntil(t, wait, "every partition committed or delivered again to its end", func(f *fakeGroup) bool {
		committed := b.Committed(t, "g", "in")
		for p := range int32(2) {
			if committed[p] != 100 && f.next[TP{Topic: "in", Partition: p}] != 100 {
				return false
			}
		}
		return true
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if _, maxActive := spy.snapshot(); maxActive != 1 {
		t.Errorf("%d commits in flight at once, want 1", maxActive)
	}
	checkCommitted(t, b, "g", "in")
}
