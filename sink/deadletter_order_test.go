package sink_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// allInvalid is a builder whose one stage finds every record invalid.
func allInvalid(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
	return stages.Discard(stages.Map(in, func(_ context.Context, r pipeline.Record) (pipeline.Record, error) {
		return r, pipeline.Invalid(errors.New("bad record"))
	}, stages.Name("decode")))
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

// deadLetterOffsets returns, for each source partition, the offsets named
// by the dead letters in recs, in their order.
func deadLetterOffsets(t *testing.T, recs []pipeline.Record) map[int32][]int64 {
	t.Helper()
	out := map[int32][]int64{}
	for _, r := range recs {
		var part, off string
		for _, h := range r.Headers {
			switch h.Key {
			case pipeline.DeadLetterHeaderPartition:
				part = string(h.Value)
			case pipeline.DeadLetterHeaderOffset:
				off = string(h.Value)
			}
		}
		p, err1 := strconv.Atoi(part)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("dead letter %d without its origin: %v", r.Offset, err)
		}
		out[int32(p)] = append(out[int32(p)], o)
	}
	return out
}

// sequence returns from, from+1, ..., to-1.
func sequence(from, to int64) []int64 {
	var s []int64
	for o := from; o < to; o++ {
		s = append(s, o)
	}
	return s
}

// A partition's dead letters are produced without waiting for each
// other's delivery reports (some produce request carries more of them
// than there are source partitions, which one dead letter at a time per
// partition cannot do), and the dead-letter topic holds them in offset
// order, each once; the input commits to its end.
func TestDeadLettersGoOutTogetherInOffsetOrder(t *testing.T) {
	t.Parallel()
	const parts, n = 2, 300
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", parts)
	b.CreateTopic(t, "dlq", 1)
	b.Produce(t, "in", input(parts, 0, n)...)
	sizes := observeProduceSizes(b, "dlq")
	p := newProducer(t, b, nil)
	r := start(t, newSource(t, b, "g", "in"), allInvalid, pipeline.WithDeadLetter(p.DeadLetter("dlq")))
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n})
	stop(t, r)

	got := deadLetterOffsets(t, b.ReadAll(t, "dlq"))
	for part := range int32(parts) {
		if !slices.Equal(got[part], sequence(0, n)) {
			t.Errorf("dead letters of in/%d name offsets %v, want 0 to %d in order, each once", part, got[part], n-1)
		}
	}
	if most := sizes.most.Load(); most <= parts {
		t.Errorf("the largest produce request to dlq carried %d dead letters, want more than %d (one outstanding per partition)", most, parts)
	}
}

// When dead letters start failing mid-way, with many handed over, Run
// stops with a StageError at the first record whose dead letter failed;
// the input commits exactly up to it, and the dead-letter topic holds
// the dead letters before it, in order.
func TestDeadLettersFailingMidwayStopRunAtTheFirst(t *testing.T) {
	t.Parallel()
	const n = 100
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "dlq", 1)
	b.Produce(t, "in", input(1, 0, n)...)
	p := newProducer(t, b, nil)
	r := start(t, newSource(t, b, "g", "in"), allInvalid, pipeline.WithDeadLetter(p.DeadLetter("dlq")))
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n})
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "dlq", Err: kerr.InvalidRecord, Count: -1})
	b.Produce(t, "in", input(1, n, n)...)

	err := r.Wait(t)
	var se *pipeline.StageError
	if !errors.As(err, &se) || se.Stage != "decode" || se.Offset != n || !errors.Is(err, pipeline.ErrNotDeadLettered) {
		t.Fatalf("Run = %v, want a StageError of decode at in/0@%d wrapping ErrNotDeadLettered", err, n)
	}
	if c := b.Committed(t, "g", "in"); c[0] != n || len(c) != 1 {
		t.Errorf("committed %v, want {0: %d}", c, n)
	}
	if got := deadLetterOffsets(t, b.ReadAll(t, "dlq")); !slices.Equal(got[0], sequence(0, n)) || len(got) != 1 {
		t.Errorf("dead letters name %v, want in/0 offsets 0 to %d in order", got, n-1)
	}
}
