package source

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// swallow makes the broker never answer requests of key (the client sees
// an unresponsive coordinator) until end is called; the next such request
// is then handled normally and the control is dropped. end fails t unless
// at least one request was swallowed.
func swallow(t *testing.T, b *kafkatest.Broker, key kmsg.Key) (end func()) {
	var on atomic.Bool
	var seen atomic.Int64
	on.Store(true)
	b.Cluster().ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		if !on.Load() {
			b.Cluster().DropControl()
			return nil, nil, false
		}
		seen.Add(1)
		b.Cluster().KeepControl()
		return nil, nil, true // no response, connection kept
	})
	return func() {
		t.Helper()
		on.Store(false)
		if seen.Load() == 0 {
			t.Errorf("no %s reached the broker", key.Name())
		}
	}
}

// waitBackground waits for the client calls Run left running to end, so
// that goleak sees no goroutine of this test.
func waitBackground(t *testing.T, src *Source, within time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { src.background.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("client calls left in the background still running after %v", within)
	}
}

// runFor starts src and waits until it delivered n records.
func runFor(t *testing.T, src *Source, n int) (*fakeGroup, *running) {
	t.Helper()
	g := newFakeGroup()
	r := start(t, src, g)
	g.waitUntil(t, wait, "all records", delivered(n))
	return g, r
}

// A final commit answered REBALANCE_IN_PROGRESS (sent between a JoinGroup
// and its SyncGroup, e.g. while the other members of a group stop at the
// same time) is retried until it lands. Before, it was logged at debug
// level and dropped, leaving the group's offsets a commit interval behind.
func TestFinalCommitRetriedWhileRebalancing(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewKfake(t), 2, 100)
	src := newSource(t, b, "g", "in", nil)
	src.cfg.CommitInterval = time.Hour // only the synchronous commits
	_, r := runFor(t, src, 200)

	// kfake fails the partitions of the next two OffsetCommit requests:
	// the final commit and its first retry. (librdkafka's own commit of
	// stored offsets on unassign would be the second one before the fix.)
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: "g", Err: kerr.RebalanceInProgress, Count: 2})
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	checkCommitted(t, b, "g", "in")
}

// A shutdown step the broker never answers cannot hold the shutdown: Run
// gives up on it within Config.CloseTimeout and returns an error naming
// it. An unresponsive coordinator's final commit is abandoned; a Close
// whose LeaveGroup is never answered is left running, after the final
// commit landed.
func TestShutdownStepBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		swallow   kmsg.Key      // the request the broker never answers
		close     time.Duration // Config.CloseTimeout
		took      time.Duration // the most Run may take after cancel
		want      []string      // what Run's error names
		notWant   string        // what it must not name ("" for nothing)
		committed bool          // whether the final commit lands
	}{
		{"final commit", kmsg.OffsetCommit, time.Second, 3 * time.Second,
			[]string{"final commit", "did not finish"}, "", false},
		// Close gets 1.2s: less than librdkafka's 5s LeaveGroup timeout.
		{"client close", kmsg.LeaveGroup, 2 * time.Second, 4 * time.Second,
			[]string{"closing the client did not finish"}, "final commit", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := topicIn(t, kafkatest.NewKfake(t), 2, 50)
			// socket.timeout.ms: librdkafka gives up on the swallowed
			// request after 5s, so what Run leaves in the background ends
			// within the test.
			src := newSource(t, b, "g", "in", map[string]any{"socket.timeout.ms": 5000})
			src.cfg.CommitInterval = time.Hour
			src.cfg.CloseTimeout = tc.close
			_, r := runFor(t, src, 100)

			end := swallow(t, b, tc.swallow)
			began := time.Now()
			err := r.stop(t)
			took := time.Since(began)
			end()
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Run = %v, want an error naming %q", err, w)
				}
			}
			if tc.notWant != "" && err != nil && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("Run = %v: it should not name %q", err, tc.notWant)
			}
			if took > tc.took {
				t.Errorf("Run took %v after cancel with CloseTimeout %v", took, tc.close)
			}
			t.Logf("Run returned after %v: %v", took, err)
			if tc.committed {
				checkCommitted(t, b, "g", "in")
			}
			waitBackground(t, src, 30*time.Second)
		})
	}
}

// The synchronous commit of a revoke is bounded the same way: with the
// coordinator not answering commits, the poll loop is back polling about
// CloseTimeout after the revoke, not after librdkafka's request timeout.
func TestRevokeCommitBounded(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewKfake(t), 4, 50)
	ov := map[string]any{"socket.timeout.ms": 5000}
	srcA := newSource(t, b, "g", "in", ov)
	srcA.cfg.CommitInterval = time.Hour
	srcA.cfg.CloseTimeout = time.Second
	a := newFakeGroup()
	type mark struct {
		at    time.Time
		polls int
	}
	revoked := make(chan mark, 1)
	a.onRevoke = func([]TP) {
		a.with(func(f *fakeGroup) {
			select {
			case revoked <- mark{time.Now(), f.polls}:
			default:
			}
		})
	}
	ra := start(t, srcA, a)
	a.waitUntil(t, wait, "A consumes all", delivered(200))

	end := swallow(t, b, kmsg.OffsetCommit)
	bg := newFakeGroup()
	rb := start(t, newSource(t, b, "g", "in", ov), bg)
	var m mark
	select {
	case m = <-revoked:
	case <-time.After(wait):
		t.Fatal("A never revoked a partition")
	}
	a.waitUntil(t, wait, "A polls again", func(f *fakeGroup) bool { return f.polls > m.polls })
	if took := time.Since(m.at); took > 3*time.Second {
		t.Errorf("A's poll loop was held %v by the revoke's commit, CloseTimeout 1s", took)
	}
	bg.waitUntil(t, wait, "B gets partitions", func(f *fakeGroup) bool { return len(f.assigned) > 0 })
	end()
	// kfake answers a connection's requests in order: nothing more is
	// committed on A's connection until librdkafka gives up on the
	// swallowed commit (socket.timeout.ms), which also ends A's abandoned
	// call.
	waitBackground(t, srcA, 30*time.Second)
	// The abandoned revoke commit never landed: B starts the moved
	// partitions over (at-least-once) and commits them itself.
	bg.waitUntil(t, wait, "B consumes its partitions", func(f *fakeGroup) bool {
		for tp := range f.assigned {
			if f.next[tp] != 50 {
				return false
			}
		}
		return len(f.assigned) > 0
	})
	if err := rb.stop(t); err != nil {
		t.Errorf("B: Run = %v", err)
	}
	if err := ra.stop(t); err != nil {
		t.Errorf("A: Run = %v", err)
	}
	checkCommitted(t, b, "g", "in")
}
