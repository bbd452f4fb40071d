package franz

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/testkit"
)

// firstProducer returns a producer whose buffer holds two records by its
// own count (kgo's holds more, and no broker answers: what kgo takes
// stays buffered until Close gives up), filled by a stage's SendChunk.
func firstProducer(t *testing.T) (*Producer, chan produce.Event) {
	t.Helper()
	p, err := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, CloseTimeout: 100 * time.Millisecond,
		Opts: []kgo.Opt{kgo.MaxBufferedRecords(100)}})
	if err != nil {
		t.Fatal(err)
	}
	p.maxRecords = 2
	reports := make(chan produce.Event, 10)
	if n, err := (client{p}).SendChunk(context.Background(), outgoing(2), reports); n != 2 || err != nil {
		t.Fatalf("SendChunk of 2 into an empty buffer of 2 = %d, %v", n, err)
	}
	return p, reports
}

func outgoing(n int) []produce.Outgoing {
	os := make([]produce.Outgoing, n)
	for i := range os {
		os[i] = produce.Outgoing{Topic: "out", Message: sluice.Message{Value: []byte("v")}}
	}
	return os
}

// sendDeadLetter starts a dead letter's Send and waits until it waits for
// room; its error comes on the channel returned.
func sendDeadLetter(t *testing.T, ctx context.Context, p *Producer, reports chan produce.Event) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		o := produce.Outgoing{Topic: "dlq", Message: sluice.Message{Value: []byte("dead")}}
		done <- (client{p}).Send(ctx, &o, reports)
	}()
	deadline := time.Now().Add(testkit.WaitTimeout)
	for p.first.waiting.Load() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the dead letter's Send returned %v with the buffer full, want it to wait", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead letter never waited for room")
		}
		time.Sleep(time.Millisecond) // polling the producer's count, with a deadline
	}
	return done
}

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
	p, reports := firstProducer(t)
	defer closeGivingUp(t, p)
	done := sendDeadLetter(t, context.Background(), p, reports)
	// A report frees the room of one record (what the promise does).
	p.buffered.add(-1, -1)
	if n, err := (client{p}).SendChunk(context.Background(), outgoing(1), reports); n != 0 || err != errBufferFull {
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
	if got := p.first.waiting.Load(); got != 0 {
		t.Errorf("%d dead letters counted waiting once it went in, want 0", got)
	}
	if records, _ := p.buffered.load(); records != 2 {
		t.Errorf("%d records buffered, want 2 (one stage record, the dead letter)", records)
	}
	p.buffered.add(1, 1) // the record the test freed is still in kgo: its report comes at Close
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
			p, reports := firstProducer(t)
			defer closeGivingUp(t, p)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := sendDeadLetter(t, ctx, p, reports)
			c.stop(t, cancel, p)
			select {
			case err := <-done:
				if !errors.Is(err, c.want) {
					t.Errorf("the dead letter's Send returned %v, want %v", err, c.want)
				}
			case <-time.After(testkit.WaitTimeout):
				t.Fatal("the dead letter went on waiting")
			}
			p.reserve.Lock()
			records, bytes := p.first.records, p.first.bytes
			p.reserve.Unlock()
			if records != 0 || bytes != 0 || p.first.waiting.Load() != 0 {
				t.Errorf("%d records of %d bytes still kept for dead letters, want none", records, bytes)
			}
		})
	}
}
