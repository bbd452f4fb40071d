package franz_test

import (
	"errors"
	"slices"
	"testing"

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
