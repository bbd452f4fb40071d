package pipeline_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The byte budget counts RecordOverhead per record on top of its key and
// value, so that it bounds what the runtime holds per record: a budget of
// exactly ten 10-byte records with their overhead admits ten of them, not
// the hundreds their values alone would allow.
func TestByteBudgetCountsTheRecordOverhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const perRecord = 10 + pipeline.RecordOverhead
		obs := newPeakObserver(0)
		g := newGate(0)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error { return g.wait(ctx, r.Offset) })
		}, pipeline.WithMaxInFlightBytes(10*perRecord), pipeline.WithHooks(obs))
		vals := make([][]byte, 100)
		for i := range vals {
			vals[i] = []byte("0123456789")
		}
		h.Assign("t", 0)
		h.Send("t", 0, vals...)
		synctest.Wait()
		obs.mu.Lock()
		recs, byts := obs.records, obs.bytes
		obs.mu.Unlock()
		if recs != 10 || byts != 10*perRecord {
			t.Fatalf("peak in flight %d records, %d bytes while record 0 is held; want 10 records, %d bytes (%d each)",
				recs, byts, 10*perRecord, perRecord)
		}
		g.open(0)
		h.WaitCommitted("t", 0, 100)
	})
}
