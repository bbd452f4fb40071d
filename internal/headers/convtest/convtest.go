// Package convtest checks a Kafka source's conversion of its client's
// records into pipeline.Records (the librdkafka source, the franz source),
// which both do with a headers.Slab.
package convtest

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/headers"
)

// Record describes the client record CheckToRecord asks newRecord for.
type Record struct {
	Topic      string
	Partition  int32
	Offset     int64
	Key, Value []byte
	Timestamp  time.Time
	Headers    []sluice.Header
}

// CheckToRecord checks toRecord on client records newRecord makes from a
// Record with two headers: every field arrives, each record has headers of
// its own (appending to one's does not write into the next one's), and the
// header slices of 64 records cost at most two allocations (the slab's),
// not one per record.
func CheckToRecord[M any](t *testing.T, newRecord func(Record) M, toRecord func(M, *headers.Slab) sluice.Record) {
	t.Helper()
	ts := time.Unix(1700000000, 0)
	rec := func(off int64) M {
		return newRecord(Record{Topic: "orders", Partition: 3, Offset: off, Key: []byte("k"), Value: []byte("v"), Timestamp: ts,
			Headers: []sluice.Header{{Key: "trace", Value: []byte("t1")}, {Key: "span", Value: []byte("s1")}}})
	}
	var hdrs headers.Slab
	a, b := toRecord(rec(7), &hdrs), toRecord(rec(8), &hdrs)
	if a.Topic != "orders" || a.Partition != 3 || a.Offset != 7 || string(a.Key) != "k" || string(a.Value) != "v" ||
		!a.Timestamp.Equal(ts) || len(a.Headers) != 2 || a.Headers[1].Key != "span" || string(a.Headers[1].Value) != "s1" {
		t.Fatalf("converted %+v", a)
	}
	a.Headers = append(a.Headers, a.Headers[0]) // must not write into b's headers
	if b.Offset != 8 || b.Headers[0].Key != "trace" {
		t.Fatalf("second record %+v", b)
	}
	recs := make([]M, 64)
	for i := range recs {
		recs[i] = rec(int64(i))
	}
	allocs := testing.AllocsPerRun(20, func() {
		for _, r := range recs {
			_ = toRecord(r, &hdrs)
		}
	})
	if allocs > 2 {
		t.Fatalf("%v allocations to convert the headers of 64 records, want at most 2", allocs)
	}
}
