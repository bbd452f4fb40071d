package integration

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// eosSideValue is a value of eosSideCall's graphs: an output, or the side
// call of the record at off.
type eosSideValue struct {
	msg  sluice.Message
	side bool
	part int32
	off  int64
}

// eosSideCall is the pipeline of the drain tests: every input record has
// the two outputs of eosFanOut, produced through produce, and a side call
// on a branch of its own (stages.Route). The side call of partition 0's
// record at failAt fails once with a transient error, closing failed; its
// retry waits an hour, so only a drain cuts it short (the stage error is
// then only logged: the partition is being taken away), while the other
// branch goes on producing the outputs of that record and of those after
// it. fed counts the records of partition 0 whose outputs reached the
// produce branch.
func eosSideCall(produce func(pipeline.Stream[sluice.Message]) pipeline.End, failAt int64, failed chan<- struct{}, fed *atomic.Int64) pipeline.Builder {
	var once atomic.Bool
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		vals := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]eosSideValue, error) {
			id := fmt.Sprintf("%d-%d", r.Partition, r.Offset)
			return []eosSideValue{
				{msg: sluice.Message{Key: r.Key, Value: []byte(id + "-a")}},
				{msg: sluice.Message{Key: r.Key, Value: []byte(id + "-b")}, part: r.Partition, off: r.Offset},
				{side: true, part: r.Partition, off: r.Offset},
			}, nil
		})
		branches := stages.Route(vals, 2, func(v eosSideValue) int {
			if v.side {
				return 1
			}
			return 0
		})
		msgs := stages.Map(branches[0], func(_ context.Context, v eosSideValue) (sluice.Message, error) {
			if v.part == 0 && v.msg.Value[len(v.msg.Value)-1] == 'b' {
				fed.Add(1)
			}
			return v.msg, nil
		})
		calls := stages.Each(branches[1], func(_ context.Context, v eosSideValue) error {
			if v.part == 0 && v.off == failAt && once.CompareAndSwap(false, true) {
				close(failed)
				return errors.New("side service unavailable")
			}
			return nil
		}, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: time.Hour, Max: time.Hour}))
		return pipeline.All(produce(msgs), calls)
	}
}

// eosDrainUnfinished: member A's side call fails once for partition 0's
// offset 5 and A is stopped during its retry wait, after every record of
// partition 0 reached the produce branch: the shutdown drain cuts the
// retry short, record 5 never finishes, while the outputs of 5 to 19 were
// produced in A's open transaction. A must abort it (Run returns nil:
// nothing is at risk) rather than commit those outputs with partition 0's
// offset at 5. B, started after, finishes the input: read_committed
// readers see every input's two outputs exactly once.
func eosDrainUnfinished(t *testing.T, b *kafkatest.Broker, in, out, group string,
	start func(name string, build func(produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder) *consumer) {
	const parts, perPartition = 2, 20
	eosTopics(t, b, in, out, parts, perPartition)
	hw := b.HighWatermarks(t, in)

	failed := make(chan struct{})
	var fed atomic.Int64
	a := start("A", func(produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder {
		return eosSideCall(produce, 5, failed, &fed)
	})
	waitFor(t, "A's side call failing at offset 5 and every record of partition 0 fed", func() bool {
		select {
		case <-failed:
			return fed.Load() == perPartition
		default:
			return false
		}
	}, a)
	if err := a.Stop(t); err != nil {
		t.Fatalf("A's Run = %v, want nil: its last transaction aborted, nothing is at risk", err)
	}
	t.Logf("A stopped; committed %v", b.Committed(t, group, in))

	bc := start("B", func(produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder {
		return eosFanOut(produce, 0)
	})
	b.WaitCommitted(t, group, in, b.HighWatermarks(t, in))
	bc.stop(t)
	checkExactlyOnce(t, b, out, parts, hw)
}

// TestExactlyOnceShutdownDrainUnfinished is eosDrainUnfinished on both
// clients (confluent.NewTransactionalProducer, franz.NewTransactionalProducer).
func TestExactlyOnceShutdownDrainUnfinished(t *testing.T) {
	eachCase(t, txnClients, txnClient.String, func(t *testing.T, c txnClient) {
		b := kafkatest.NewBroker(t)
		const in, out, group = "eosd-in", "eosd-out", "eosd-g"
		eosDrainUnfinished(t, b, in, out, group, func(name string, build func(func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder) *consumer {
			src, produce := c.member(t, b, group, in, "eosd-"+name)
			return startConsumer(t, name, src, build(produce(out)), eosQueue)
		})
	})
}
