package engine

import (
	"testing"
	"time"
)

// BenchmarkTrackerFlow drives one partition's tracker the way a Kafka
// source and an Each stage do, with records that hold pointers (a topic,
// key, value and timestamp, as a client's): add a chunk of 256, feed it,
// complete it one value at a time (Each) or with one call (a batch). An op
// is one record. Hook runs PerValue with a completion hook
// (sluice.HookRecordsCompleted), which orders the reports.
func BenchmarkTrackerFlow(b *testing.B) {
	const chunk = 256
	recs := make([]Record, chunk)
	topic := string([]byte("topic"))
	for i := range recs {
		recs[i] = Record{Topic: topic, Offset: int64(i), Key: make([]byte, 8), Value: make([]byte, 100), Timestamp: time.Now()}
	}
	for _, bc := range []struct {
		name           string
		perValue, hook bool
	}{{"PerValue", true, false}, {"PerValueHook", true, true}, {"PerChunk", false, false}} {
		perValue := bc.perValue
		b.Run(bc.name, func(b *testing.B) {
			tr := newTracker(&segmentPool{}, func(int, int64) {})
			if bc.hook {
				tr.onCompleted = func(int, int64) {}
			}
			buf := make([]Item[Record], 0, chunk)
			ts := make([]Ticket, chunk)
			for i := 0; i < b.N; i += chunk {
				buf = addAndFeed(tr, recs, buf, ts)
				clear(buf)
				if perValue {
					for _, t := range ts {
						tr.done(t)
					}
				} else {
					tr.done(ts...)
				}
			}
		})
	}
}

// addAndFeed adds recs to tr, feeds them into buf (emptied first) and
// writes their tickets into ts, for the benchmarks that move chunks
// through a tracker.
func addAndFeed(tr *tracker, recs []Record, buf []Item[Record], ts []Ticket) []Item[Record] {
	tr.add(recs)
	buf = tr.feed(buf[:0], len(recs))
	for j := range buf {
		ts[j] = buf[j].Ticket
	}
	return buf
}
