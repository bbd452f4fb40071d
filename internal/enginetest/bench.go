package enginetest

import (
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// BenchCommitted measures build, run with opts, over b.N records: it
// hands the records (offsets 0 to b.N-1 of partition 0 of topic "bench")
// to a testkit harness, then times the assignment of the partition until
// every record is committed, and reports the allocations (an op is one
// record).
func BenchCommitted(b *testing.B, build pipeline.Builder, opts ...pipeline.Option) {
	recs := make([]sluice.Record, b.N)
	for i := range recs {
		recs[i] = sluice.Record{Topic: "bench", Offset: int64(i)}
	}
	h := testkit.New(b, build, opts...)
	h.SendRecords(recs...)
	b.ReportAllocs()
	b.ResetTimer()
	h.Assign("bench", 0)
	h.WaitCommitted("bench", 0, int64(b.N))
	b.StopTimer()
	if err := h.Stop(); err != nil {
		b.Fatal(err)
	}
}
