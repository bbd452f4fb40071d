//go:build linux

package kafkatest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// The pool holds the single-node Apache Kafka clusters of this process.
// Starting one costs seconds, so a test borrows an idle one, and gives it
// back reset (no topics, groups or group configs) when it ends; tests that run in
// parallel borrow different clusters. [Pooled] closes them all when the
// tests are over.
var pool struct {
	mu     sync.Mutex
	idle   []*apacheCluster
	all    map[*apacheCluster]bool
	closed bool
}

// borrowApache returns an idle pooled cluster, or starts one.
func borrowApache(ctx context.Context) (*apacheCluster, error) {
	pool.mu.Lock()
	if n := len(pool.idle); n > 0 {
		c := pool.idle[n-1]
		pool.idle = pool.idle[:n-1]
		pool.mu.Unlock()
		return c, nil
	}
	pool.mu.Unlock()
	c, err := startApache(ctx, apacheConfig{nodes: 1})
	if err != nil {
		return nil, err
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.all == nil {
		pool.all = map[*apacheCluster]bool{}
	}
	pool.all[c] = true
	return c, nil
}

// giveBack resets c and returns it to the pool, or closes it when the
// reset fails (what the test left behind would leak into the next one).
func giveBack(c *apacheCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.reset(ctx)
	pool.mu.Lock()
	if err == nil && !pool.closed {
		pool.idle = append(pool.idle, c)
		pool.mu.Unlock()
		return
	}
	delete(pool.all, c)
	pool.mu.Unlock()
	if err != nil && os.Getenv(EnvLog) != "" {
		fmt.Fprintf(os.Stderr, "kafkatest: closing an Apache Kafka broker instead of reusing it: %v\n", err)
	}
	c.close()
}

// closePool closes every pooled cluster.
func closePool() {
	pool.mu.Lock()
	pool.closed = true
	all := pool.all
	pool.all, pool.idle = nil, nil
	pool.mu.Unlock()
	var wg sync.WaitGroup
	for c := range all {
		wg.Go(c.close)
	}
	wg.Wait()
}

// discard closes c, a borrowed cluster, instead of giving it back.
func discard(c *apacheCluster) {
	pool.mu.Lock()
	delete(pool.all, c)
	pool.mu.Unlock()
	c.close()
}
