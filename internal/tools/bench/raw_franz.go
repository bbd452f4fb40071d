package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rawFranzOpts are the kgo options of the raw franz loops: the settings
// package franz sets (FetchMaxWait 100ms, reset to the start), a group
// with kgo's default balancer (cooperative-sticky), auto-commit every
// second; the first assignment is marked in w.
func rawFranzOpts(cfg runConfig, w *window) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(cfg.brokers...),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(cfg.topic),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(commitEvery),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { w.assign() }),
	}
}

// fetchErr returns the first error of fs that is not a context's.
func fetchErr(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(t string, p int32, e error) {
		if err == nil && !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) {
			err = fmt.Errorf("fetch %s[%d]: %w", t, p, e)
		}
	})
	return err
}

// rawFranz is the bare franz-go loop: PollFetches, record every record,
// repeat; kgo auto-commits what was polled every second, and the loop
// commits what is left synchronously once the last record is recorded,
// then closes.
func rawFranz(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	cl, err := kgo.NewClient(rawFranzOpts(cfg, w)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	target := int64(cfg.l.records)
	for n := int64(0); n < target; {
		polled, err := pollRecorded(ctx, ctx, cl, tr, w, nil)
		if err != nil {
			return err
		}
		n += polled
	}
	w.close()
	return cl.CommitUncommittedOffsets(ctx)
}

// pollFetches polls cl once, within pctx. Its error is ctx's once ctx is
// done, or the first fetch error that is not a context's.
func pollFetches(ctx, pctx context.Context, cl *kgo.Client) (kgo.Fetches, error) {
	fs := cl.PollFetches(pctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := fetchErr(fs); err != nil {
		return nil, err
	}
	return fs, nil
}

// pollRecorded polls cl once, within pctx, and records every record it
// returns (tr, w), then hands it to each (if not nil). It returns how
// many records it polled, or an error: the poll failed, ctx is done, or
// a record is of a partition tr does not know (the records after it are
// still recorded and handed on).
func pollRecorded(ctx, pctx context.Context, cl *kgo.Client, tr *tracker, w *window, each func(*kgo.Record)) (int64, error) {
	return pollEach(ctx, pctx, cl, w, func(r *kgo.Record) error {
		var err error
		if !tr.record(r.Partition, r.Offset, valueHash(r.Value)) {
			err = fmt.Errorf("record of unknown partition %d", r.Partition)
		}
		if each != nil {
			each(r)
		}
		return err
	})
}

// pollEach polls cl once, within pctx, marks the window open and calls fn
// on every record it returns. It returns how many records it polled, or
// an error: the poll failed, ctx is done, or fn's first error (fn still
// sees the records after it).
func pollEach(ctx, pctx context.Context, cl *kgo.Client, w *window, fn func(*kgo.Record) error) (int64, error) {
	fs, err := pollFetches(ctx, pctx, cl)
	if err != nil {
		return 0, err
	}
	var n int64
	var first error
	fs.EachRecord(func(r *kgo.Record) {
		w.open()
		if err := fn(r); err != nil && first == nil {
			first = err
		}
		n++
	})
	return n, first
}

// k2kRawFranz is the raw consume → produce loop on franz-go: one client
// consumes and produces (kgo's default producer: acks=all, idempotent);
// each record's promise marks its delivery, and the offsets below which
// everything was delivered are marked for kgo's auto-commit
// (AutoCommitMarks, every second). Once the last record is delivered the
// loop commits the marks synchronously, then closes.
func k2kRawFranz(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	d := newDeliveries(cfg.l)
	cl, err := kgo.NewClient(append(rawFranzOpts(cfg, w), kgo.AutoCommitMarks())...)
	if err != nil {
		return err
	}
	defer cl.Close()
	failed := make(chan error, 1)
	marked := make([]int64, cfg.l.partitions)
	mark := func() {
		offs := make(map[int32]kgo.EpochOffset)
		for p, next := range d.committable() {
			if next > marked[p] {
				marked[p] = next
				offs[int32(p)] = kgo.EpochOffset{Epoch: -1, Offset: next}
			}
		}
		if len(offs) > 0 {
			cl.MarkCommitOffsets(map[string]map[int32]kgo.EpochOffset{cfg.topic: offs})
		}
	}
	target := int64(cfg.l.records)
	var n int64
	lastMark := time.Now()
	for {
		select {
		case err := <-failed:
			return err
		default:
		}
		if d.left.Load() == 0 {
			break
		}
		if time.Since(lastMark) >= 100*time.Millisecond {
			mark()
			lastMark = time.Now()
		}
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if n >= target {
			// Everything consumed: wait for the last deliveries.
			pctx, cancel = context.WithTimeout(ctx, 10*time.Millisecond)
		}
		polled, err := pollRecorded(ctx, pctx, cl, tr, w, func(r *kgo.Record) {
			p, o := r.Partition, r.Offset
			cl.Produce(ctx, &kgo.Record{Topic: cfg.out, Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case failed <- fmt.Errorf("delivery of input %d/%d: %w", p, o, err):
					default:
					}
					return
				}
				if d.mark(p, o) {
					w.close()
				}
			})
		})
		cancel()
		if err != nil {
			return err
		}
		n += polled
	}
	mark()
	return cl.CommitMarkedOffsets(ctx)
}
