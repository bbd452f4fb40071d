package franz_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The producer closed while four partitions have dead letters in flight:
// Run stops with an error, and every record committed had its dead letter
// stored, once (no report of one dead letter counted for another).
func TestDeadLetterCloseWhileInFlightCommitsOnlyStored(t *testing.T) {
	t.Parallel()
	const parts, n = 4, 4000
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "dlq", 1)
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	h := testkit.New(t, producertest.AllInvalid, pipeline.WithDeadLetter(p.DeadLetter("dlq")))
	for part := int32(0); part < parts; part++ {
		h.Assign("in", part)
	}
	vals := make([][]byte, 0, n)
	for i := range n {
		vals = append(vals, []byte{byte(i)})
	}
	for part := int32(0); part < parts; part++ {
		h.Send("in", part, vals...)
	}
	h.WaitCommitted("in", 0, 200)
	closeErr := p.Close() // dead letters in flight on every partition
	runErr := h.Wait()
	t.Logf("Close: %v; Run: %v", closeErr, runErr)
	if runErr == nil {
		t.Fatal("Run returned nil after the producer closed under it")
	}
	got := producertest.DeadLetterOffsets(t, b.ReadAll(t, "dlq"))
	for part := int32(0); part < parts; part++ {
		c := h.Committed("in", part)
		offs := got[part]
		stored := map[int64]int{}
		for _, o := range offs {
			stored[o]++
		}
		for o := int64(0); o < c; o++ {
			if stored[o] != 1 {
				t.Errorf("in/%d committed at %d, but offset %d has %d dead letters", part, c, o, stored[o])
				break
			}
		}
		if !slices.IsSorted(offs) {
			t.Errorf("in/%d: dead letters out of order", part)
		}
		t.Logf("in/%d committed %d, %d dead letters stored", part, c, len(offs))
	}
	if !errors.Is(runErr, sluice.ErrNotDeadLettered) && !errors.Is(runErr, franz.ErrClosed) {
		t.Errorf("Run returned %v, want ErrNotDeadLettered or ErrClosed", runErr)
	}
}

// A destination of the user's that produces the dead letter with
// Producer.DeadLetter and then does more that fails (here: a second
// store refusing the record for good) returned an error: pipeline.
// WithDeadLetter promises the record's offset counts as done only when
// the destination returned nil, so Run must stop with
// ErrNotDeadLettered and the record must stay uncommitted.
func TestDeadLetterCompositeDestinationErrorKeepsTheRecordUncommitted(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "dlq", 1)
	p := newProducer(t, b)
	dlq := p.DeadLetter("dlq")
	errAudit := sluice.Permanent(errors.New("audit store refused the record"))
	fn := func(ctx context.Context, dl sluice.DeadLetter) error {
		if err := dlq(ctx, dl); err != nil {
			return err
		}
		return errAudit
	}
	h := testkit.New(t, producertest.AllInvalid, pipeline.WithDeadLetter(fn))
	h.Assign("in", 0)
	h.Send("in", 0, []byte("a"))
	done := make(chan error, 1)
	go func() { done <- h.Wait() }()
	// Either Run stops (the promise) or the offset commits (the fault).
	var err error
	deadline := time.After(wait)
wait:
	for {
		changed := h.Fake().Changed()
		if h.Committed("in", 0) >= 0 {
			err = h.Stop()
			break
		}
		select {
		case err = <-done:
			break wait
		case <-changed:
		case <-deadline:
			t.Fatal("Run neither stopped nor committed")
		}
	}
	if got := h.Committed("in", 0); got != -1 {
		t.Errorf("committed %d, want -1: the destination returned %v for offset 0", got, errAudit)
	}
	if !errors.Is(err, sluice.ErrNotDeadLettered) {
		t.Errorf("Run returned %v, want an error wrapping ErrNotDeadLettered", err)
	}
}
