package producertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// inputEpoch is the timestamp of Input's first record: when the test
// process started, to the millisecond Kafka keeps. A fixed date would age
// past Apache Kafka's time-based retention (7 days by default), and the
// broker deletes such records during a test, whatever their offsets.
var inputEpoch = time.UnixMilli(time.Now().UnixMilli())

// Input makes n records for each partition, numbered from first, with a
// key ("k<partition>-<i>"), a value ("v<partition>-<i>"), a timestamp and
// three headers (one key repeated, to check order). The backends' own
// tests use it too.
func Input(partitions int32, first, n int) []sluice.Record {
	var out []sluice.Record
	for i := first; i < first+n; i++ {
		for p := range partitions {
			out = append(out, inputRecord(p, i))
		}
	}
	return out
}

// inputRecord is Input's record i of partition p.
func inputRecord(p int32, i int) sluice.Record {
	return sluice.Record{
		Partition: p,
		Key:       fmt.Appendf(nil, "k%d-%d", p, i),
		Value:     fmt.Appendf(nil, "v%d-%d", p, i),
		Timestamp: inputEpoch.Add(time.Duration(i) * time.Millisecond),
		Headers: []sluice.Header{
			{Key: "h", Value: fmt.Appendf(nil, "%d", i)},
			{Key: "h", Value: []byte("second")},
			{Key: "empty", Value: nil},
		},
	}
}

func headersString(hs []sluice.Header) string {
	s := ""
	for _, h := range hs {
		s += fmt.Sprintf("%s=%q;", h.Key, h.Value)
	}
	return s
}

// ToMessage maps an input record to the output message: same key, value
// prefixed with "out:", the input's headers plus "from" naming its origin
// ("<partition>@<offset>").
func ToMessage(r sluice.Record) (sluice.Message, error) {
	hs := make([]sluice.Header, 0, len(r.Headers)+1)
	hs = append(hs, r.Headers...)
	hs = append(hs, sluice.Header{Key: "from", Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)})
	return sluice.Message{Key: r.Key, Value: append([]byte("out:"), r.Value...), Headers: hs}, nil
}

// decode marks every record whose offset is 3 mod 7 invalid.
func decode(_ context.Context, r sluice.Record) (sluice.Record, error) {
	if r.Offset%7 == 3 {
		return r, sluice.Invalid(fmt.Errorf("cannot decode offset %d", r.Offset))
	}
	return r, nil
}

// dlqBuilder dead-letters the records decode finds invalid.
func dlqBuilder(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(stages.Map(in, decode, stages.Name("decode")))
}

// AllInvalid is a builder whose one stage, "decode", finds every record
// invalid. The backends' own tests use it too.
func AllInvalid(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		return r, sluice.Invalid(errors.New("bad record"))
	}, stages.Name("decode")))
}

// retries counts the retries Run reports.
type retries struct{ n atomic.Int64 }

func (r *retries) OnStageRetry(string, sluice.TopicPartition, int, time.Duration, error) {
	r.n.Add(1)
}

// createTopics creates on b the topic "in" of parts partitions, holding
// Input(parts, 0, n), and the topic out of outParts partitions.
func createTopics(t testing.TB, b *kafkatest.Broker, parts int32, n int, out string, outParts int32) {
	t.Helper()
	b.CreateTopic(t, "in", parts)
	b.CreateTopic(t, out, outParts)
	b.Produce(t, "in", Input(parts, 0, n)...)
}

// Stop shuts Run down and fails the test unless it returns nil.
func Stop(t testing.TB, r *testkit.Running) {
	t.Helper()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

// WaitCommitted waits until the group's commits of topic on b equal want
// (testkit.Running.WaitCommitted: failing the test when a partition goes
// past it, when Run returns first or after testkit.WaitTimeout).
func WaitCommitted(t testing.TB, b *kafkatest.Broker, r *testkit.Running, group, topic string, want map[int32]int64) {
	t.Helper()
	r.WaitCommitted(t, func() (map[int32]int64, error) { return b.CommittedContext(t.Context(), group, topic) }, want)
}

// DeadLetterOffsets returns, for each source partition, the offsets named
// by the dead letters in recs, in their order.
func DeadLetterOffsets(t testing.TB, recs []sluice.Record) map[int32][]int64 {
	t.Helper()
	out := map[int32][]int64{}
	for _, r := range recs {
		var part, off string
		for _, h := range r.Headers {
			switch h.Key {
			case sluice.DeadLetterHeaderPartition:
				part = string(h.Value)
			case sluice.DeadLetterHeaderOffset:
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
