package franz_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

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
