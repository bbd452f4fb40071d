package pipeline_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// liveHeapGrowth runs 100000 records through build, 1000 at a time, and
// returns how much the live heap grew over the last 80000 (the Fake's
// log of the records included).
func liveHeapGrowth(t *testing.T, build pipeline.Builder, opts ...pipeline.Option) int64 {
	h := testkit.New(t, build, opts...)
	h.Assign("t", 0)
	vals := testkit.Values(1000)
	live := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	var base int64
	sent := int64(0)
	for round := 1; round <= 100; round++ {
		h.Send("t", 0, vals...)
		sent += int64(len(vals))
		h.WaitCommitted("t", 0, sent)
		if round == 20 {
			base = live()
		}
	}
	grown := live() - base
	stopClean(t, h)
	return grown
}

// A long run of invalid records, dead-lettered with deferred outcomes,
// grows the live heap no more than the same run of valid records (the
// Fake keeps every record it was sent), give or take 2 MiB.
func TestDeadLetterLongInvalidRunHasBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	valid := liveHeapGrowth(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) { return r, nil }))
	})
	d := newAsyncDest()
	d.noFail = true
	d.noRecord = true
	invalid := liveHeapGrowth(t, invalidEverything, pipeline.WithDeadLetter(d.fn))
	t.Logf("live heap growth over 80000 records: valid %d, invalid %d", valid, invalid)
	if invalid-valid > 2<<20 {
		t.Errorf("80000 dead letters grew the live heap by %d bytes more than 80000 valid records", invalid-valid)
	}
}
