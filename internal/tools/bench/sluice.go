package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
)

// The Sluice cases run pipeline.Run over one backend's source with their
// default settings (plus -budget). The first assignment is
// sluice.HookPartitionAssigned's; the window opens when the first
// records enter a graph (sluice.HookRecordsDelivered) and closes when
// every partition's records are all committable
// (sluice.HookRecordsCompleted reached its end offset); then the case
// cancels Run, which drains, commits and returns.

// graphWorkers, batchSize and batchWait shape graph (b).
const (
	graphWorkers = 8
	batchSize    = 500
	batchWait    = 100 * time.Millisecond
)

type newSource func(cfg runConfig) (sluice.Source, error)

func confluentSource(cfg runConfig) (sluice.Source, error) {
	return source.NewSource(source.Config{GroupConfig: sluice.GroupConfig{Brokers: cfg.brokers, Group: cfg.group, Topics: []string{cfg.topic}, OffsetStore: cfg.offsetStore}})
}

func franzSource(cfg runConfig) (sluice.Source, error) {
	return franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: cfg.brokers, Group: cfg.group, Topics: []string{cfg.topic}, OffsetStore: cfg.offsetStore}})
}

// sluiceEach is case (a): one Each stage recording every record.
func sluiceEach(src newSource) caseFunc {
	return func(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
		return runSluice(ctx, cfg, src, w, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				return recordOrFail(tr, r.Partition, r.Offset, valueHash(r.Value))
			})
		})
	}
}

// item is what graph (b) carries past its Map: where a record was, and
// its value's hash.
type item struct {
	partition int32
	offset    int64
	hash      uint64
}

// sluiceGraph is case (b): Map (hash the value) → Pool(8) (pass it on) →
// Batch(500, 100ms) → Each (record the batch).
func sluiceGraph(src newSource) caseFunc {
	return func(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
		return runSluice(ctx, cfg, src, w, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			hashed := stages.Map(in, func(_ context.Context, r sluice.Record) (item, error) {
				return item{r.Partition, r.Offset, valueHash(r.Value)}, nil
			})
			pooled := stages.Pool(hashed, graphWorkers, func(_ context.Context, it item) (item, error) { return it, nil })
			batches := stages.Batch(pooled, batchSize, batchWait)
			return stages.Each(batches, func(_ context.Context, b []item) error {
				for _, it := range b {
					if err := recordOrFail(tr, it.partition, it.offset, it.hash); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// k2kSluice is Map (record the input) → Pool(8) (build the message) →
// sink.Produce with the backend's producer to the output
// topic, on one backend's source and producer. A record commits only
// after its delivery report.
func k2kSluice(src newSource, newProd newProducer) caseFunc {
	return func(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
		prod, err := newProd(cfg)
		if err != nil {
			return err
		}
		err = runSluice(ctx, cfg, src, w, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(toMessages(in, tr), prod, cfg.out, asIs)
		})
		return errors.Join(err, prod.Close())
	}
}

// toMessages is the k2k graph before its Produce: Map records the input
// record, Pool(8) builds the message (key and value unchanged).
func toMessages(in pipeline.Stream[sluice.Record], tr *tracker) pipeline.Stream[sluice.Message] {
	recorded := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		return r, recordOrFail(tr, r.Partition, r.Offset, valueHash(r.Value))
	})
	return stages.Pool(recorded, graphWorkers, func(_ context.Context, r sluice.Record) (sluice.Message, error) {
		return sluice.Message{Key: r.Key, Value: r.Value}, nil
	})
}

func recordOrFail(tr *tracker, p int32, o int64, h uint64) error {
	if !tr.record(p, o, h) {
		return sluice.Permanent(errors.New("record of a partition outside the layout"))
	}
	return nil
}

// runSluice runs build over a fresh source, with the options extra, until
// every record is committable, then stops Run and returns its error.
func runSluice(ctx context.Context, cfg runConfig, newSrc newSource, w *window, build pipeline.Builder, extra ...pipeline.Option) error {
	src, err := newSrc(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := append([]pipeline.Option{pipeline.WithHooks(newProgress(cfg.l, w))}, extra...)
	if cfg.budget > 0 {
		opts = append(opts, pipeline.WithMaxInFlightBytes(cfg.budget))
	}
	errc := make(chan error, 1)
	go func() { errc <- pipeline.Run(ctx, src, build, opts...) }()
	select {
	case <-w.done:
		cancel()
		return <-errc
	case err := <-errc:
		if err == nil {
			err = errors.New("pipeline.Run returned before every record was committable")
		}
		return err
	}
}

// progress is the hook that opens and closes a Sluice run's window.
type progress struct {
	l    layout
	w    *window
	done []atomic.Bool // partition p reached its end offset
	left atomic.Int64  // partitions with records that did not
}

func newProgress(l layout, w *window) *progress {
	pr := &progress{l: l, w: w, done: make([]atomic.Bool, l.partitions)}
	for p := range l.partitions {
		if l.count(p) > 0 {
			pr.left.Add(1)
		}
	}
	return pr
}

// OnPartitionAssigned marks the first assignment.
func (pr *progress) OnPartitionAssigned(sluice.TopicPartition) { pr.w.assign() }

// OnRecordsDelivered opens the window at the first delivery.
func (pr *progress) OnRecordsDelivered(sluice.TopicPartition, int) { pr.w.open() }

// OnRecordsCompleted closes the window once every partition's next
// committable offset reached its end.
func (pr *progress) OnRecordsCompleted(tp sluice.TopicPartition, _ int, next int64) {
	p := int(tp.Partition)
	if p < 0 || p >= len(pr.done) || next < pr.l.count(p) || !pr.done[p].CompareAndSwap(false, true) {
		return
	}
	if pr.left.Add(-1) == 0 {
		pr.w.close()
	}
}
