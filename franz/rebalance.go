package franz

import (
	"slices"
	"strings"

	"github.com/sluice-go/sluice"
)

// How rebalances reach the Group.
//
// kgo runs OnPartitionsAssigned, OnPartitionsRevoked and OnPartitionsLost
// on its group-management goroutine, one at a time, and the rebalance does
// not proceed until the callback returns (consumer_group.go: a cooperative
// revoke before the rejoin, an eager revoke before JoinGroup, the assign
// before fetching the new partitions starts). sluice.Group must only be
// called from the poll goroutine, so each callback hands its partitions to
// the poll loop (queue, then cancels the poll in progress) and waits until
// the loop has served them (rebalance.Core.Assigned, Core.Revoked with its
// drain and synchronous commit, or Core.Lost). The rebalance is thus
// blocked for exactly as long as the drain and the commit take, as with
// librdkafka. A callback that comes before the loop starts (a
// transactional producer's id initializing) waits for it.
// Every way out of Run once the client exists leaves the group first
// (Leave, endHandOff): the callbacks waiting are then served in closing
// mode (no Group call) and later ones return at once, so kgo's Close,
// which waits for them, never waits for a loop that has ended.
//
// kgo.BlockRebalanceOnPoll is not used: with it a poll blocks while a
// callback waits (consumer.go, waitAndAddPoller), so a callback waiting for
// the poll loop would deadlock it. Without it kgo may run a callback while
// the loop handles polled records; the loop serves the callback once it is
// done with them, and the owned set fences anything stale.

type cbKind int

const (
	cbAssigned cbKind = iota
	cbRevoked
	cbLost
)

func (k cbKind) String() string {
	return [...]string{"assigned", "revoked", "lost"}[k]
}

// callback is one kgo rebalance callback waiting for the poll loop.
type callback struct {
	kind cbKind
	tps  []sluice.TopicPartition
	done chan struct{}
}

// handOff runs on kgo's goroutine: it queues the callback for the poll
// loop, wakes the loop and waits until the loop served it. After the
// shutdown drained (handOffEnd) it returns at once: nothing is owned any
// more and kgo needs no answer.
func (r *runner) handOff(kind cbKind, m map[string][]int32) {
	cb := &callback{kind: kind, tps: tpsOf(m), done: make(chan struct{})}
	r.mu.Lock()
	if r.handOffEnd {
		r.mu.Unlock()
		return
	}
	r.queue = append(r.queue, cb)
	if r.cancelPoll != nil {
		r.cancelPoll()
	}
	r.mu.Unlock()
	<-cb.done
}

// serveCallbacks serves the callbacks queued by handOff, in order, on the
// poll goroutine.
func (r *runner) serveCallbacks() {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return
		}
		cb := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		r.serve(cb)
		close(cb.done)
	}
}

// endHandOff makes later callbacks return at once and serves those queued.
func (r *runner) endHandOff() {
	r.mu.Lock()
	r.handOffEnd = true
	r.mu.Unlock()
	r.serveCallbacks()
}

// serve hands one callback to the core. A callback that comes after a
// fatal error assigns nothing: Run is about to fail.
func (r *runner) serve(cb *callback) {
	switch cb.kind {
	case cbAssigned:
		if r.fatal == nil {
			if start, err := r.core.Claim(cb.tps); err != nil {
				r.fatal = err
			} else {
				r.startAt(cb.tps, start)
				r.core.Assigned(cb.tps)
			}
		}
	case cbRevoked:
		// Still the owner in the group's eyes: kgo waits for this
		// callback before it lets the rebalance go on.
		r.core.Revoked(cb.tps)
	case cbLost:
		r.core.Lost(cb.tps)
	}
}

// GaveUpPaused resumes tps: kgo keeps a partition paused across revoke
// and re-assign, and a new graph has not asked for a pause.
func (r *runner) GaveUpPaused(tps []sluice.TopicPartition) { _ = r.Resume(tps) }

func tpsOf(m map[string][]int32) []sluice.TopicPartition {
	var out []sluice.TopicPartition
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, sluice.TopicPartition{Topic: t, Partition: p})
		}
	}
	slices.SortFunc(out, func(a, b sluice.TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}
