package franz

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/testkit"
)

// closeGivingUp closes p, which gives up on what kgo buffered.
func closeGivingUp(t *testing.T, p *Producer) {
	t.Helper()
	var cerr *sluice.CloseError
	if err := p.Close(); err != nil && !errors.As(err, &cerr) {
		t.Errorf("Close: %v", err)
	}
}

// A dead letter that finds kgo's buffer full goes in ahead of the Produce
// stages: the room a report frees is left to it (a stage's send finds the
// buffer full), and the report wakes it.
func TestDeadLetterGoesAheadOfTheStages(t *testing.T) {
	p := roomProducer(t, 2, 0, sized(2, 1))
	defer closeGivingUp(t, p)
	done := deadLetterOf(t, context.Background(), p, 4)
	// A report frees the room of one record, without the wake-up yet.
	p.buffered.add(-1, -1)
	if n, err := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n != 0 || err != errBufferFull {
		t.Fatalf("a stage's SendChunk while a dead letter waits for the room freed = %d, %v; want 0, errBufferFull", n, err)
	}
	p.roomFreed()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the dead letter's Send: %v", err)
		}
	case <-time.After(testkit.WaitTimeout):
		t.Fatal("the dead letter was not woken by the report that freed room")
	}
	if r, b := firstCounts(p); r != 0 || b != 0 || p.first.waiting.Load() != 0 {
		t.Errorf("%d records of %d bytes still kept for dead letters once it went in, want none", r, b)
	}
	if records, _ := p.buffered.load(); records != 2 {
		t.Errorf("%d records buffered, want 2 (one stage record, the dead letter)", records)
	}
	unfree(p, 1, 1) // the record the test freed is still in kgo: its report comes at Close
}

// A dead letter that stops waiting (its context ended, or Close started)
// leaves the room it kept to the stages, having handed nothing over, with
// the error saying why.
func TestDeadLetterGivingUpLeavesTheRoom(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(t *testing.T, cancel context.CancelFunc, p *Producer)
		want error
	}{
		// The caller's wait for a full buffer returns the context's cause.
		{"context", func(_ *testing.T, cancel context.CancelFunc, _ *Producer) { cancel() }, errBufferFull},
		{"Close", func(t *testing.T, _ context.CancelFunc, p *Producer) { closeGivingUp(t, p) }, ErrClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := roomProducer(t, 2, 0, sized(2, 1))
			defer closeGivingUp(t, p)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := deadLetterOf(t, ctx, p, 4)
			c.stop(t, cancel, p)
			select {
			case err := <-done:
				if !errors.Is(err, c.want) {
					t.Errorf("the dead letter's Send returned %v, want %v", err, c.want)
				}
			case <-time.After(testkit.WaitTimeout):
				t.Fatal("the dead letter went on waiting")
			}
			if r, b := firstCounts(p); r != 0 || b != 0 || p.first.waiting.Load() != 0 {
				t.Errorf("%d records of %d bytes still kept for dead letters, want none", r, b)
			}
		})
	}
}
