package sourcetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

var (
	accepted = outcomes(sluice.AckAccepted)
	rejected = outcomes(sluice.AckRejected)
)

// noRetry makes the first failure of a stage exhaust its retries, which
// in share mode releases the record.
var noRetry = pipeline.WithRetry(sluice.RetryPolicy{Attempts: 1})

// shareAcceptEachOnce: every record is delivered once, reaches the end
// untouched and is accepted; the broker has every record acknowledged
// while the source runs.
func shareAcceptEachOnce(t *testing.T, d ShareDriver) {
	const parts, n = 3, 100
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	r, src := startShare(t, d, group, topic, checkAndCount(t, topic, s))
	waitAcknowledged(t, d, r, group, topic, parts)
	stopWithin(t, r, pipeline.DefaultDrainTimeout)
	for p := range int32(parts) {
		s.exactly(t, p, 0, n)
	}
	checkOutcomes(t, src, topic, parts, n, func(int32, int64) []sluice.AckOutcome { return accepted })
	noneHeld(t, src)
}

// shareInvalid: invalid records are dead-lettered, then accepted, or,
// without a dead-letter destination (toDeadLetter false), rejected; either
// way they are never delivered again and Run goes on. The others are
// accepted.
func shareInvalid(toDeadLetter bool) func(*testing.T, ShareDriver) {
	return func(t *testing.T, d ShareDriver) {
		const parts, n = 2, 50
		topic, group := newTopic(t, d, parts, n)
		bad := func(off int64) bool { return off%10 == 3 }

		s := newSeen()
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			valid := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
				if bad(r.Offset) {
					return r, sluice.Invalid(errBad)
				}
				return r, nil
			}, stages.Name("validate"))
			return stages.Each(valid, func(_ context.Context, r sluice.Record) error {
				s.add(r.Partition, r.Offset)
				return nil
			})
		}
		var opts []pipeline.Option
		dead, invalid := &deadLetters{}, rejected
		if toDeadLetter {
			opts, invalid = append(opts, dead.option()), accepted
		}
		r, src := startShare(t, d, group, topic, build, opts...)
		waitAcknowledged(t, d, r, group, topic, parts)
		stopWithin(t, r, pipeline.DefaultDrainTimeout)
		checkOutcomes(t, src, topic, parts, n, func(_ int32, off int64) []sluice.AckOutcome {
			if bad(off) {
				return invalid
			}
			return accepted
		})
		for p := range int32(parts) {
			if got, want := s.count(p), n-n/10; got != want {
				t.Errorf("partition %d: %d valid records processed, want %d", p, got, want)
			}
		}
		if got := dead.list(); toDeadLetter && len(got) != parts*n/10 {
			t.Errorf("%d dead letters, want %d", len(got), parts*n/10)
		}
		noneHeld(t, src)
	}
}

// deadLetters collects what a dead-letter destination got.
type deadLetters struct {
	mu  sync.Mutex
	got []sluice.DeadLetter
}

func (c *deadLetters) option() pipeline.Option {
	return pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got = append(c.got, dl)
		return nil
	})
}

func (c *deadLetters) list() []sluice.DeadLetter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// shareReleasedComesBack: a record whose retries ran out is released;
// the broker delivers it again (to the only member) and, succeeding
// then, it is accepted. Run goes on.
func shareReleasedComesBack(t *testing.T, d ShareDriver) {
	if d.MaxDeliveries() == 1 {
		t.Skip("the sources dead-letter a record's second delivery (MaxDeliveries 1)")
	}
	const parts, n, flakyP, flaky = 2, 20, int32(0), int64(7)
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	var runs atomic.Int32
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			if r.Partition == flakyP && r.Offset == flaky && runs.Add(1) == 1 {
				return errBoom
			}
			s.add(r.Partition, r.Offset)
			return nil
		})
	}
	r, src := startShare(t, d, group, topic, build, noRetry)
	waitAcknowledged(t, d, r, group, topic, parts)
	stopWithin(t, r, pipeline.DefaultDrainTimeout)
	if got := runs.Load(); got != 2 {
		t.Errorf("the released record ran %d times, want 2 (released, then accepted)", got)
	}
	for p := range int32(parts) {
		s.exactly(t, p, 0, n)
	}
	checkOutcomes(t, src, topic, parts, n, func(p int32, off int64) []sluice.AckOutcome {
		if p == flakyP && off == flaky {
			return outcomes(sluice.AckReleased, sluice.AckAccepted)
		}
		return accepted
	})
	noneHeld(t, src)
}

// shareMaxDeliveries: a record failing every run is released each time;
// once the broker delivered it more than MaxDeliveries times, the source
// hands it to DeadLetterRecord: it reaches the dead-letter destination
// (stage sluice.MaxDeliveriesStage) without running the graph and is
// accepted, or, without a destination (toDeadLetter false), it is
// rejected.
func shareMaxDeliveries(toDeadLetter bool) func(*testing.T, ShareDriver) {
	return func(t *testing.T, d ShareDriver) {
		limit := d.MaxDeliveries()
		if limit == 0 {
			t.Skip("the sources have no delivery limit (ShareDriver.MaxDeliveries is 0)")
		}
		const n, poison = 10, int64(3)
		topic, group := newTopic(t, d, 1, n)

		var runs atomic.Int32
		s := newSeen()
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset == poison {
					runs.Add(1)
					return errBoom
				}
				s.add(r.Partition, r.Offset)
				return nil
			})
		}
		opts := []pipeline.Option{noRetry}
		dead, last := &deadLetters{}, sluice.AckRejected
		if toDeadLetter {
			opts, last = append(opts, dead.option()), sluice.AckAccepted
		}
		r, src := startShare(t, d, group, topic, build, opts...)
		waitAcknowledged(t, d, r, group, topic, 1)
		stopWithin(t, r, pipeline.DefaultDrainTimeout)
		if got := runs.Load(); int(got) != limit {
			t.Errorf("the poison record ran through the graph %d times, want %d (MaxDeliveries)", got, limit)
		}
		if got := dead.list(); toDeadLetter && (len(got) != 1 || got[0].Record.Offset != poison ||
			got[0].Stage != sluice.MaxDeliveriesStage || !sluice.IsInvalid(got[0].Err)) {
			t.Errorf("dead letters %+v, want one of offset %d, stage %q, with an Invalid error", got, poison, sluice.MaxDeliveriesStage)
		}
		s.mu.Lock()
		s.n[0][poison] = 1 // it never completed: count it once for the check below
		s.mu.Unlock()
		s.exactly(t, 0, 0, n)
		checkOutcomes(t, src, topic, 1, n, func(_ int32, off int64) []sluice.AckOutcome {
			if off != poison {
				return accepted
			}
			var want []sluice.AckOutcome
			for range limit {
				want = append(want, sluice.AckReleased)
			}
			return append(want, last)
		})
		if c := src.Group().ShareCounts(); c.DeadLettered != 1 {
			t.Errorf("%d records handed to DeadLetterRecord, want 1", c.DeadLettered)
		}
		noneHeld(t, src)
	}
}

// releasedWithin bounds how long the records a source released at its
// shutdown take to come back to the next member: far less than the
// broker's lock (ShareDriver.NewShareSource), so they were released, not
// left to expire.
const releasedWithin = 15 * time.Second

// shareShutdown: the graph hangs at offset k (its drain times out). The
// source stops within the drain timeout plus ShutdownTimeout, having
// accepted exactly what finished. A second member of the group then gets,
// at once, exactly the rest: every record is processed once in all.
func shareShutdown(t *testing.T, d ShareDriver) {
	const n, k, drain = 40, int64(13), 200 * time.Millisecond
	topic, group := newTopic(t, d, 1, n)

	first := newSeen()
	gate := make(chan struct{})
	r, src := startShare(t, d, group, topic, gateBuilder(first, 0, k, gate, nil, 0), pipeline.WithDrainTimeout(drain))
	waitChan(t, r, gate, "offset k reaching the gate")
	stopWithin(t, r, drain)
	stopped := time.Now()
	first.exactly(t, 0, 0, k)
	checkOutcomes(t, src, topic, 1, n, func(_ int32, off int64) []sluice.AckOutcome {
		if off >= k {
			return nil
		}
		return accepted
	})
	for _, h := range src.Group().Held() {
		if h.Offset < k {
			t.Errorf("%s/%d@%d held without an outcome at shutdown, want only records from %d", h.Topic, h.Partition, h.Offset, k)
		}
	}

	second := newSeen()
	r2, src2 := startShare(t, d, group, topic, checkAndCount(t, topic, second))
	waitAcknowledged(t, d, r2, group, topic, 1)
	if took := time.Since(stopped); took > releasedWithin {
		t.Errorf("the second member finished the records the first left unfinished %v after it stopped, want within %v: released, not left to their lock's expiry", took, releasedWithin)
	}
	stopWithin(t, r2, pipeline.DefaultDrainTimeout)
	second.exactly(t, 0, k, n)
	noneHeld(t, src2)
}

// shareCancelIdle: a source with nothing left to do returns promptly once
// ctx is done, having called Shutdown.
func shareCancelIdle(t *testing.T, d ShareDriver) {
	topic, group := newTopic(t, d, 1, 1)
	s := newSeen()
	r, src := startShare(t, d, group, topic, checkAndCount(t, topic, s))
	waitAcknowledged(t, d, r, group, topic, 1)
	stopWithin(t, r, pipeline.DefaultDrainTimeout)
	s.exactly(t, 0, 0, 1)
	noneHeld(t, src)
}

// sharePauseResume: the end holds every record until every partition
// delivered so far was paused by backpressure (a small partition queue),
// then lets them go. No partition gets records while paused (§3), and
// every record is processed once and accepted.
func sharePauseResume(t *testing.T, d ShareDriver) {
	const parts, n = 2, 150
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	gate := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if err := waitOpen(ctx, gate); err != nil {
				return err
			}
			checkRecord(t, topic, r)
			s.add(r.Partition, r.Offset)
			return nil
		})
	}
	r, src := startShare(t, d, group, topic, build, pipeline.WithPartitionQueue(8))
	r.WaitUntil(t, "every partition delivered so far paused by backpressure", func() bool {
		cg := src.Group()
		if cg == nil {
			return false
		}
		owned := cg.Owned()
		return len(owned) > 0 && fmt.Sprint(cg.Paused()) == fmt.Sprint(owned)
	})
	close(gate)
	waitAcknowledged(t, d, r, group, topic, parts)
	stopWithin(t, r, pipeline.DefaultDrainTimeout)
	for p := range int32(parts) {
		s.exactly(t, p, 0, n)
	}
	checkOutcomes(t, src, topic, parts, n, func(int32, int64) []sluice.AckOutcome { return accepted })
	if c := src.Group().Counts(); c.Pauses == 0 || c.Resumes == 0 {
		t.Errorf("%d pauses asked for, %d partitions resumed; want some of each (%+v)", c.Pauses, c.Resumes, c)
	}
	noneHeld(t, src)
}
