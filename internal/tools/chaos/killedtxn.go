package main

import (
	"context"
	"slices"
	"sync"
	"time"
)

// killedTxns follows, in exactly-once mode, the transactions that
// SIGKILLs left open until the broker ends them: it aborts them at their
// transaction timeout, counted from their start, and read_committed
// readers of their partitions wait at the first of their records until
// then. Every incarnation has a transactional id of its own, so no
// restart ends them sooner. One goroutine per transaction polls it;
// wait ends them all.
type killedTxns struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	watched int
	ended   []time.Duration // from each kill to the end of its transaction
}

func newKilledTxns() *killedTxns {
	ctx, cancel := context.WithCancel(context.Background())
	return &killedTxns{ctx: ctx, cancel: cancel}
}

// killedTxnPoll is how often a killed process's transaction is
// described: the resolution of the times measured.
const killedTxnPoll = 50 * time.Millisecond

// watch polls the transaction id, left open by a kill at killed, until
// it is no longer ongoing, and records how long after the kill that was.
func (k *killedTxns) watch(c *cluster, id string, killed time.Time) {
	k.mu.Lock()
	k.watched++
	k.mu.Unlock()
	k.wg.Go(func() {
		t := time.NewTicker(killedTxnPoll)
		defer t.Stop()
		for {
			select {
			case <-k.ctx.Done():
				return
			case <-t.C:
			}
			st, err := c.transaction(k.ctx, id)
			if err != nil || st.state != "" {
				continue // an error is retried until wait gives up
			}
			k.mu.Lock()
			k.ended = append(k.ended, time.Since(killed))
			k.mu.Unlock()
			return
		}
	})
}

// wait waits at most d for every watched transaction to end, stops the
// watchers and returns, sorted, how long each took after its kill, and
// how many were still open. It may be called again (it then returns at
// once); no watch may follow it.
func (k *killedTxns) wait(d time.Duration) (ended []time.Duration, open int) {
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
	k.cancel()
	<-done
	k.mu.Lock()
	defer k.mu.Unlock()
	ended = slices.Clone(k.ended)
	slices.Sort(ended)
	return ended, k.watched - len(ended)
}
