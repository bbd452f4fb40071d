package producertest

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// deadLetterCarriesRecord: dead letters carry the original key, value,
// timestamp and headers untouched, followed by the sluice.dlq.* headers
// with exact values; one per invalid record, and the input commits
// exactly to its end.
func (s *suite[P]) deadLetterCarriesRecord(t *T) {
	const parts, n = 2, 50
	b := kafkatest.NewBroker(t)
	p := s.setUp(t, b, parts, n, "dlq", 1)
	in := b.ReadAll(t, "in")

	s.drain(t, b, parts, n, dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("dlq")))

	var want []sluice.Record
	for _, rec := range in {
		if rec.Offset%7 == 3 {
			want = append(want, rec)
		}
	}
	got := b.ReadAll(t, "dlq")
	if len(got) != len(want) {
		t.Fatalf("%d dead letters, want %d", len(got), len(want))
	}
	// One dlq partition; partitions' dead letters may interleave.
	byKey := map[string]sluice.Record{}
	for _, d := range got {
		byKey[string(d.Key)] = d
	}
	for _, w := range want {
		d, ok := byKey[string(w.Key)]
		if !ok {
			t.Errorf("no dead letter for %d@%d", w.Partition, w.Offset)
			continue
		}
		wantHeaders := append(append([]sluice.Header(nil), w.Headers...),
			sluice.Header{Key: sluice.DeadLetterHeaderTopic, Value: []byte("in")},
			sluice.Header{Key: sluice.DeadLetterHeaderPartition, Value: fmt.Appendf(nil, "%d", w.Partition)},
			sluice.Header{Key: sluice.DeadLetterHeaderOffset, Value: fmt.Appendf(nil, "%d", w.Offset)},
			sluice.Header{Key: sluice.DeadLetterHeaderError, Value: fmt.Appendf(nil, "cannot decode offset %d", w.Offset)},
			sluice.Header{Key: sluice.DeadLetterHeaderStage, Value: []byte("decode")},
		)
		if string(d.Value) != string(w.Value) || !d.Timestamp.Equal(w.Timestamp) ||
			headersString(d.Headers) != headersString(wantHeaders) {
			t.Errorf("dead letter of %d@%d: value %q ts %v headers %s\nwant value %q ts %v headers %s",
				w.Partition, w.Offset, d.Value, d.Timestamp, headersString(d.Headers),
				w.Value, w.Timestamp, headersString(wantHeaders))
		}
	}
}

// produceSizes observes the produce requests to a topic of a kfake
// cluster and keeps the most records one request carried.
type produceSizes struct{ most atomic.Int64 }

func observeProduceSizes(b *kafkatest.Broker, topic string) *produceSizes {
	ps := &produceSizes{}
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Observe: true, Count: -1,
		When: func(req kmsg.Request) bool {
			var n int64
			for _, tp := range req.(*kmsg.ProduceRequest).Topics {
				for _, p := range tp.Partitions {
					n += recordsIn(p.Records)
				}
			}
			for {
				m := ps.most.Load()
				if n <= m || ps.most.CompareAndSwap(m, n) {
					return true
				}
			}
		}})
	return ps
}

// recordsIn counts the records of the record batches in b.
func recordsIn(b []byte) int64 {
	var n int64
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			return n
		}
		n += int64(rb.NumRecords)
		size := 12 + int(rb.Length) // FirstOffset and Length precede what Length counts
		if size > len(b) {
			return n
		}
		b = b[size:]
	}
	return n
}

// deadLettersInOrder: a partition's dead letters are produced without
// waiting for each other's delivery reports (some produce request carries
// more of them than there are source partitions, which one dead letter at
// a time per partition cannot do), and the dead-letter topic holds them in
// offset order, each once; the input commits exactly to its end.
func (s *suite[P]) deadLettersInOrder(t *T) {
	const parts, n = 2, 300
	b := kafkatest.NewKfake(t)
	p := s.setUp(t, b, parts, n, "dlq", 1)
	sizes := observeProduceSizes(b, "dlq")
	s.drain(t, b, parts, n, AllInvalid, pipeline.WithDeadLetter(p.DeadLetter("dlq")))

	got := DeadLetterOffsets(t, b.ReadAll(t, "dlq"))
	for part := range int32(parts) {
		if !slices.Equal(got[part], sequence(0, n)) {
			t.Errorf("dead letters of in/%d name offsets %v, want 0 to %d in order, each once", part, got[part], n-1)
		}
	}
	if most := sizes.most.Load(); most <= parts {
		t.Errorf("the largest produce request to dlq carried %d dead letters, want more than %d (one outstanding per partition)", most, parts)
	}
}

// deadLettersFailingMidway: when dead letters start failing mid-way, with
// many handed over, Run stops with a StageError at the first record whose
// dead letter failed; the input commits exactly up to it, and the
// dead-letter topic holds the dead letters before it, in order.
func (s *suite[P]) deadLettersFailingMidway(t *T) {
	const n = 100
	b := kafkatest.NewKfake(t)
	p := s.setUp(t, b, 1, n, "dlq", 1)
	r := s.start(t, b, AllInvalid, pipeline.WithDeadLetter(p.DeadLetter("dlq")))
	WaitCommitted(t, b, r, "g", "in", map[int32]int64{0: n})
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "dlq", Err: kerr.InvalidRecord, Count: -1})
	b.Produce(t, "in", Input(1, n, n)...)

	err := r.Wait(t)
	var se *sluice.StageError
	if !errors.As(err, &se) || se.Stage != "decode" || se.Offset != n || !errors.Is(err, sluice.ErrNotDeadLettered) {
		t.Fatalf("Run = %v, want a StageError of decode at in/0@%d wrapping ErrNotDeadLettered", err, n)
	}
	if c := b.Committed(t, "g", "in"); c[0] != n || len(c) != 1 {
		t.Errorf("committed %v, want {0: %d}", c, n)
	}
	if got := DeadLetterOffsets(t, b.ReadAll(t, "dlq")); !slices.Equal(got[0], sequence(0, n)) || len(got) != 1 {
		t.Errorf("dead letters name %v, want in/0 offsets 0 to %d in order", got, n-1)
	}
}
