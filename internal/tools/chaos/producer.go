package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/demo"
)

// producer writes the demo workload (demo.Value: unique ids, 1% malformed)
// to the input topic, event i to partition i mod partitions, each batch
// acknowledged before the next.
type producer struct {
	c    *cluster
	next int // index of the next event
}

// produce writes the next n events now.
func (p *producer) produce(ctx context.Context, n int) error {
	recs := make([]sluice.Record, 0, n)
	for range n {
		recs = append(recs, sluice.Record{Partition: int32(p.next) % p.c.partitions, Value: demo.Value(p.next)})
		p.next++
	}
	if err := p.c.b.ProduceContext(ctx, inputTopic, recs...); err != nil {
		return fmt.Errorf("producing events %d..%d: %w", p.next-n, p.next-1, err)
	}
	return nil
}

// stream produces about rate events per second in batches every 20 ms
// until stop is called, which lets the batch under way be acknowledged
// (so nothing lands after stop returned) and returns how many events
// were produced in all and the first error. It runs on its own
// goroutine; p must not be used until stop returned.
func (p *producer) stream(rate int) (stop func() (int, error)) {
	quit := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		const every = 20 * time.Millisecond
		batch := max(1, rate*int(every/time.Millisecond)/1000)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				done <- nil
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := p.produce(ctx, batch)
				cancel()
				if err != nil {
					done <- err
					return
				}
			}
		}
	}()
	return func() (int, error) {
		close(quit)
		err := <-done
		return p.next, err
	}
}
