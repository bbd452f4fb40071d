package testkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
)

// Close is bounded as the Kafka producers' Close is (their close timeout
// plus at most two seconds), also while a FailWith function, which stands
// for the broker, holds a message in flight: a test that simulates a slow
// delivery that way and then closes the producer must see Close return
// (and the message given up on, or delivered), not hang.
func TestCloseIsBoundedWhileFailWithHoldsAMessage(t *testing.T) {
	// Not in a synctest bubble: Close waits on a mutex, which does not
	// let a bubble's clock advance.
	{
		prod := testkit.NewProducer()
		release := make(chan struct{})
		entered := make(chan struct{})
		prod.FailWith(func(testkit.Produced) error {
			close(entered)
			<-release // the broker is slow
			return nil
		})
		dlErr := make(chan error, 1)
		go func() {
			dlErr <- prod.DeadLetter("dlq")(context.Background(), sluice.DeadLetter{Record: sluice.Record{Topic: "in"}, Err: errors.New("bad")})
		}()
		<-entered
		closed := make(chan error, 1)
		start := time.Now()
		go func() { closed <- prod.Close() }()
		bound := time.NewTimer(5 * time.Second) // the Kafka producers' bound: close timeout + 2s
		defer bound.Stop()
		returned := false
		select {
		case <-closed:
			returned = true
		case <-bound.C:
			t.Errorf("Close still running after %v while a FailWith function held a message; want it bounded", time.Since(start))
		}
		close(release)
		if err := <-dlErr; err != nil && !errors.Is(err, sink.ErrClosed) {
			t.Errorf("DeadLetter while closing = %v, want nil (delivered) or an error wrapping sink.ErrClosed", err)
		}
		if !returned {
			<-closed
		}
		// Once closed, the producer refuses work with sink.ErrClosed.
		if err := prod.DeadLetter("dlq")(context.Background(), sluice.DeadLetter{Err: errors.New("bad")}); !errors.Is(err, sink.ErrClosed) {
			t.Errorf("DeadLetter after Close = %v, want sink.ErrClosed", err)
		}
	}
}
