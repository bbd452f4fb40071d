package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The handoff loops are the raw loops with the least a consumer must add
// to process records off its poll loop, which Sluice's contracts need
// (the poll loop keeps polling, so heartbeats and pauses never wait for a
// user's function; only processed offsets commit): one goroutine per
// partition, fed through a bounded channel with runs of up to
// handoffRun consecutive records of its partition; each goroutine records
// what it receives, then publishes the offset after it, and the poll loop
// commits only published offsets. They convert nothing, keep nothing
// after a record is recorded, pause nothing (a full channel blocks the
// poll loop) and stage nothing. Against them, a Sluice case's ratio shows
// what Sluice costs beyond moving records off the poll loop.
const (
	// handoffRun is the most consecutive records of one partition passed
	// on at a time: the sources' delivery size.
	handoffRun = 128
	// handoffQueue is each partition's channel capacity in runs: 256 runs
	// of 128 records hold pipeline.DefaultPartitionQueue records.
	handoffQueue = 256
	// handoffMark is how often a handoff loop hands the published offsets
	// to its client's committer.
	handoffMark = 100 * time.Millisecond
)

// handoff is the per-partition goroutines of a handoff loop over records
// of type R. Calls to send and close come from the poll loop.
type handoff[R any] struct {
	runs     []chan []R
	next     []atomic.Int64 // per partition: the offset after the last recorded, 0 if none
	marked   []int64        // per partition: the last offset marks passed on
	pending  []R            // the run being filled, of partition pendingP
	pendingP int32
	wg       sync.WaitGroup
}

// newHandoff starts one goroutine per partition of tr's layout; each
// records its runs with tr (at is a record's partition, offset and
// value; add passes on only partitions of the layout) and closes w once
// tr holds target records.
func newHandoff[R any](tr *tracker, w *window, target int64, at func(R) (int32, int64, []byte)) *handoff[R] {
	n := tr.l.partitions
	h := &handoff[R]{runs: make([]chan []R, n), next: make([]atomic.Int64, n), marked: make([]int64, n)}
	var recorded atomic.Int64
	for p := range n {
		h.runs[p] = make(chan []R, handoffQueue)
		h.wg.Go(func() {
			for run := range h.runs[p] {
				var last int64
				for _, r := range run {
					part, o, v := at(r)
					tr.record(part, o, valueHash(v))
					last = o
				}
				h.next[p].Store(last + 1)
				if recorded.Add(int64(len(run))) == target {
					w.close()
				}
			}
		})
	}
	return h
}

// add appends r, of partition p, to the run being filled, which it
// passes on first if it is of another partition, and after if it holds
// handoffRun records (so a run is consecutive records of one partition,
// as the sources deliver them). It returns an error for a partition
// outside the layout.
func (h *handoff[R]) add(p int32, r R) error {
	if p < 0 || int(p) >= len(h.runs) {
		return fmt.Errorf("record of unknown partition %d", p)
	}
	if p != h.pendingP {
		h.flush()
		h.pendingP = p
	}
	h.pending = append(h.pending, r)
	if len(h.pending) == handoffRun {
		h.flush()
	}
	return nil
}

// flush passes on the run being filled, if it holds a record.
func (h *handoff[R]) flush() {
	if len(h.pending) == 0 {
		return
	}
	h.runs[h.pendingP] <- h.pending
	h.pending = make([]R, 0, handoffRun)
}

// marks calls mark for every partition whose published offset moved
// since the last call, with the offset. Call it from the poll loop.
func (h *handoff[R]) marks(mark func(p int32, next int64)) {
	for p := range h.next {
		if next := h.next[p].Load(); next > h.marked[p] {
			h.marked[p] = next
			mark(int32(p), next)
		}
	}
}

// close passes on the run being filled and stops the goroutines once
// they recorded everything.
func (h *handoff[R]) close() {
	h.flush()
	for _, c := range h.runs {
		close(c)
	}
	h.wg.Wait()
}

// runHandoff drives a handoff loop: poll (which adds what it polled to h
// and returns how many; the run being filled is passed on after each
// call, as the sources deliver at the end of a poll) until target
// records were polled, marking the published offsets every handoffMark;
// then it waits for every record to be recorded and marks once more. It
// stops the goroutines however it returns, and returns the first error
// of poll, of mark, or of ctx.
func runHandoff[R any](ctx context.Context, h *handoff[R], target int64, poll func() (int64, error), mark func() error) error {
	err := func() error {
		lastMark := time.Now()
		for n := int64(0); n < target; {
			if err := ctx.Err(); err != nil {
				return err
			}
			polled, err := poll()
			if err != nil {
				return err
			}
			h.flush()
			n += polled
			if time.Since(lastMark) >= handoffMark {
				if err := mark(); err != nil {
					return err
				}
				lastMark = time.Now()
			}
		}
		return nil
	}()
	h.close()
	if err != nil {
		return err
	}
	return mark()
}

// rawConfluentHandoff is rawConfluent with its records processed off the
// poll loop (see handoff): like package source, a poll waits up to
// pollMs for one event, then takes what librdkafka has ready (at most
// 4 × handoffRun events). librdkafka stores only published offsets
// (enable.auto.offset.store off) and auto-commits them every second; the
// loop commits what is left synchronously at the end.
func rawConfluentHandoff(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	c, err := subscribed(cfg, storingConsumerConfig(cfg), w)
	if err != nil {
		return err
	}
	target := int64(cfg.l.records)
	h := newHandoff(tr, w, target, func(m *kafka.Message) (int32, int64, []byte) {
		return m.TopicPartition.Partition, int64(m.TopicPartition.Offset), m.Value
	})
	mark := func() error {
		var tps []kafka.TopicPartition
		h.marks(func(p int32, next int64) {
			tps = append(tps, kafka.TopicPartition{Topic: &cfg.topic, Partition: p, Offset: kafka.Offset(next)})
		})
		if len(tps) == 0 {
			return nil
		}
		_, err := c.StoreOffsets(tps)
		return err
	}
	poll := func() (int64, error) {
		var n int64
		timeout := pollMs
		for range 4 * handoffRun {
			ev := c.Poll(timeout)
			timeout = 0
			switch e := ev.(type) {
			case nil:
				return n, nil
			case *kafka.Message:
				w.open()
				if err := h.add(e.TopicPartition.Partition, e); err != nil {
					return n, err
				}
				n++
			case kafka.Error:
				if e.IsFatal() {
					return n, e
				}
			}
		}
		return n, nil
	}
	if err := runHandoff(ctx, h, target, poll, mark); err != nil {
		return errors.Join(err, c.Close())
	}
	return errors.Join(commitStored(c), c.Close())
}

// rawFranzHandoff is rawFranz with its records processed off the poll
// loop (see handoff): each PollFetches is passed on in runs, and kgo
// auto-commits the published offsets every second (AutoCommitMarks); the
// loop commits what is left synchronously at the end.
func rawFranzHandoff(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	cl, err := kgo.NewClient(append(rawFranzOpts(cfg, w), kgo.AutoCommitMarks())...)
	if err != nil {
		return err
	}
	defer cl.Close()
	target := int64(cfg.l.records)
	h := newHandoff(tr, w, target, func(r *kgo.Record) (int32, int64, []byte) {
		return r.Partition, r.Offset, r.Value
	})
	mark := func() error {
		offs := make(map[int32]kgo.EpochOffset)
		h.marks(func(p int32, next int64) {
			offs[p] = kgo.EpochOffset{Epoch: -1, Offset: next}
		})
		if len(offs) > 0 {
			cl.MarkCommitOffsets(map[string]map[int32]kgo.EpochOffset{cfg.topic: offs})
		}
		return nil
	}
	poll := func() (int64, error) {
		return pollEach(ctx, ctx, cl, w, func(r *kgo.Record) error { return h.add(r.Partition, r) })
	}
	if err := runHandoff(ctx, h, target, poll, mark); err != nil {
		return err
	}
	return cl.CommitMarkedOffsets(ctx)
}
