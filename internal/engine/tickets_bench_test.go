package engine

import "testing"

// BenchmarkTrackerChunk is the tracker's work per record (one op) for
// chunks of 256 records through a graph of one stage, on one goroutine:
// add, feed, then complete the chunk. Check adds the check of the chunk
// the stage passes on (Outlet.Send); OutOfOrder checks it while a record
// completed ahead of an earlier one, so that the check reads every slot.
func BenchmarkTrackerChunk(b *testing.B) {
	for _, bc := range []struct {
		name              string
		check, outOfOrder bool
	}{{"NoCheck", false, false}, {"Check", true, false}, {"CheckOutOfOrder", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			const chunk = 256
			tr := newTracker(&segmentPool{}, func(int, int64) {})
			recs := make([]Record, chunk)
			buf := make([]Item[Record], 0, chunk)
			ts := make([]Ticket, chunk)
			for i := 0; i < b.N; i += chunk {
				tr.add(recs)
				buf = tr.feed(buf[:0], chunk)
				for j := range buf {
					ts[j] = buf[j].Ticket
				}
				if bc.outOfOrder {
					tr.done(ts[chunk-1]) // the chunk's first record is still held
					buf = buf[:chunk-1]
				}
				if bc.check && unheld(tr, buf) != nil {
					b.Fatal("a held chunk was refused")
				}
				tr.done(ts[:len(buf)]...)
			}
		})
	}
}
