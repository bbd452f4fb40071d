package main

import (
	"context"
	"time"
)

// tick calls f every d, on a goroutine of its own, until ctx is done; the
// channel it returns is closed once that goroutine ended (f is not
// running and will not run again).
func tick(ctx context.Context, d time.Duration, f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f()
			}
		}
	}()
	return done
}
