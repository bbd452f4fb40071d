package pipeline_test

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A paused partition resumes whatever the global limits, up to the largest
// int64: computing three quarters of a limit must not overflow.
func TestHugeInFlightLimitsStillResumePausedPartitions(t *testing.T) {
	for name, opt := range map[string]pipeline.Option{
		"records 1<<62":    pipeline.WithMaxInFlight(1 << 62),
		"records MaxInt64": pipeline.WithMaxInFlight(math.MaxInt64),
		"bytes 1<<62":      pipeline.WithMaxInFlightBytes(1 << 62),
		"bytes MaxInt64":   pipeline.WithMaxInFlightBytes(math.MaxInt64),
	} {
		t.Run(name, func(t *testing.T) { pausesAtThePartitionQueue(t, opt) })
	}
}

// peakObserver records the most records and bytes ever in flight, and the
// committable offset of every partition as completions report it.
type peakObserver struct {
	mu           sync.Mutex
	records      int64
	bytes        int64
	next         map[sluice.TopicPartition]int64
	firstDone    sluice.TopicPartition // first partition to complete all its records
	atFirstDone  map[sluice.TopicPartition]int64
	recordsPerTP int64
}

func newPeakObserver(recordsPerTP int64) *peakObserver {
	return &peakObserver{next: map[sluice.TopicPartition]int64{}, recordsPerTP: recordsPerTP}
}

func (o *peakObserver) OnInFlight(records, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.records, o.bytes = max(o.records, records), max(o.bytes, bytes)
}

func (o *peakObserver) OnRecordsCompleted(tp sluice.TopicPartition, _ int, next int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next[tp] = max(o.next[tp], next)
	if next == o.recordsPerTP && o.atFirstDone == nil {
		o.firstDone, o.atFirstDone = tp, maps.Clone(o.next)
	}
}

// The global limits are caps, whatever the number of partitions: a
// delivery is admitted only as far as the budget has room, the rest waits
// (first come, first served) while its partition is paused, and paused
// partitions resume in turn. Every partition makes progress.
func TestInFlightLimitsAreCapsWithManyPartitions(t *testing.T) {
	const parts, perPart = 200, 200
	for name, tc := range map[string]struct {
		opts              []pipeline.Option
		maxRecs, maxBytes int64
	}{
		"records": {[]pipeline.Option{pipeline.WithMaxInFlight(1000)}, 1000, pipeline.DefaultMaxInFlightBytes},
		"bytes":   {[]pipeline.Option{pipeline.WithMaxInFlightBytes(5000)}, 500, 5000},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := newPeakObserver(perPart)
				h := eachHarness(t, func(ctx context.Context, r sluice.Record) error {
					time.Sleep(time.Millisecond) // a slow consumer: the budget fills up
					return nil
				}, append(tc.opts, pipeline.WithHooks(obs))...)
				ids := make([]int32, parts)
				for i := range ids {
					ids[i] = int32(i)
				}
				vals := make([][]byte, perPart)
				for i := range vals {
					vals[i] = []byte("0123456789") // 10 bytes
				}
				for _, p := range ids {
					h.Send("t", p, vals...)
				}
				// Every partition has a backlog when it is assigned.
				h.Assign("t", ids...)
				for _, p := range ids {
					h.WaitCommitted("t", p, perPart)
				}
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if obs.records > tc.maxRecs || obs.bytes > tc.maxBytes {
					t.Fatalf("peak in flight %d records, %d bytes; the limits allow %d and %d", obs.records, obs.bytes, tc.maxRecs, tc.maxBytes)
				}
				// Fairness: by the time one partition completed all its
				// records, every partition had completed some.
				for _, p := range ids {
					tp := sluice.TopicPartition{Topic: "t", Partition: p}
					if obs.atFirstDone[tp] == 0 {
						t.Fatalf("when %v completed its %d records, %v had completed none", obs.firstDone, perPart, tp)
					}
				}
			})
		})
	}
}

// Records that waited for admission when their partition was revoked are
// dropped, never committed: the next assignment delivers them again, and
// every record is processed exactly once.
func TestWaitingRecordsOfARevokedPartitionAreRedelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(0)
		var mu sync.Mutex
		seen := map[sluice.TopicPartition][]int64{}
		h := eachHarness(t, func(ctx context.Context, r sluice.Record) error {
			if r.Partition == 0 {
				if err := g.wait(ctx, r.Offset); err != nil {
					return err
				}
			}
			mu.Lock()
			defer mu.Unlock()
			tp := sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			seen[tp] = append(seen[tp], r.Offset)
			return nil
		}, pipeline.WithMaxInFlight(10))
		h.Send("t", 0, testkit.Values(64)...)
		h.Send("t", 1, testkit.Values(64)...)
		h.Assign("t", 0, 1)
		synctest.Wait() // 10 records of partition 0 in flight; the rest waits
		h.Revoke("t", 1)
		if got := h.Committed("t", 1); got != -1 {
			t.Fatalf("partition 1 committed %d, want nothing: none of its records was admitted", got)
		}
		g.open(0)
		h.WaitCommitted("t", 0, 64)
		h.Assign("t", 1)
		h.WaitCommitted("t", 1, 64)
		mu.Lock()
		defer mu.Unlock()
		for _, p := range []int32{0, 1} {
			offs := seen[sluice.TopicPartition{Topic: "t", Partition: p}]
			if len(offs) != 64 || offs[0] != 0 || offs[63] != 63 {
				t.Fatalf("partition %d processed %d records (%v...), want offsets 0 to 63 once each", p, len(offs), offs[:min(len(offs), 5)])
			}
		}
	})
}

// A record heavier than the whole byte limit is admitted alone, when
// nothing else is in flight: it never waits forever.
func TestARecordHeavierThanTheByteLimitGoesAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := newPeakObserver(0)
		h := eachHarness(t, func(context.Context, sluice.Record) error {
			time.Sleep(time.Millisecond)
			return nil
		}, pipeline.WithMaxInFlightBytes(10), pipeline.WithHooks(obs))
		big := make([][]byte, 20)
		for i := range big {
			big[i] = make([]byte, 100)
		}
		h.Send("t", 0, big...)
		h.Send("t", 1, big...)
		h.Assign("t", 0, 1)
		h.WaitCommitted("t", 0, 20)
		h.WaitCommitted("t", 1, 20)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if obs.records != 1 || obs.bytes != 100+pipeline.RecordOverhead {
			t.Fatalf("peak in flight %d records, %d bytes; want one 100-byte record (%d bytes with the overhead) at a time",
				obs.records, obs.bytes, 100+pipeline.RecordOverhead)
		}
	})
}

// Paused partitions resume in turn, oldest pause first: one Resumable call
// lists only as many as the free budget has room for one delivery each
// (the largest seen), and Wake calls the source back for the others.
func TestPausedPartitionsResumeInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		delivered, release := make(chan struct{}), make(chan struct{})
		tpOf := func(p int32) sluice.TopicPartition { return sluice.TopicPartition{Topic: "t", Partition: p} }
		src := sourceFunc(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			var all []sluice.TopicPartition
			for p := range int32(30) {
				all = append(all, tpOf(p))
			}
			if err := g.Assign(all); err != nil {
				return err
			}
			// Partition 29 delivers 128 records, the others 32: every
			// partition reaches its queue limit (32) and pauses.
			if !g.Deliver(tpOf(29), recsAt(tpOf(29), 0, 128)) {
				t.Error("partition 29 did not pause")
			}
			for p := range int32(29) {
				if !g.Deliver(tpOf(p), recsAt(tpOf(p), 0, 32)) {
					t.Errorf("partition %d did not pause", p)
				}
			}
			close(delivered)
			synctest.Wait() // partitions 0 to 19 completed; 20 to 29 are blocked
			<-g.Wake()
			// 416 records in flight: room for (2000-416)/128 = 12 deliveries.
			first := g.Resumable()
			select {
			case <-g.Wake():
			default:
				t.Error("Wake not signalled while more partitions had room")
			}
			second := g.Resumable()
			third := g.Resumable()
			want := func(from, to int32) []sluice.TopicPartition {
				var out []sluice.TopicPartition
				for p := from; p < to; p++ {
					out = append(out, tpOf(p))
				}
				return out
			}
			if !slices.Equal(first, want(0, 12)) || !slices.Equal(second, want(12, 20)) || len(third) != 0 {
				t.Errorf("resumed %v, then %v, then %v; want partitions 0-11, then 12-19, then none", first, second, third)
			}
			close(release)
			return nil
		})
		err := pipeline.Run(context.Background(), src, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				wait := delivered // every partition is paused before any completes
				if r.Partition >= 20 {
					wait = release
				}
				select {
				case <-wait:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		}, pipeline.WithMaxInFlight(2000), pipeline.WithPartitionQueue(32))
		if err != nil {
			t.Fatal(err)
		}
	})
}

// The byte budget counts RecordOverhead per record on top of its key and
// value, so that it bounds what the runtime holds per record: a budget of
// exactly ten 10-byte records with their overhead admits ten of them, not
// the hundreds their values alone would allow.
func TestByteBudgetCountsTheRecordOverhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const perRecord = 10 + pipeline.RecordOverhead
		obs := newPeakObserver(0)
		g := newGate(0)
		h := eachHarness(t, g.waitRecord, pipeline.WithMaxInFlightBytes(10*perRecord), pipeline.WithHooks(obs))
		vals := make([][]byte, 100)
		for i := range vals {
			vals[i] = []byte("0123456789")
		}
		h.Assign("t", 0)
		h.Send("t", 0, vals...)
		synctest.Wait()
		obs.mu.Lock()
		recs, byts := obs.records, obs.bytes
		obs.mu.Unlock()
		if recs != 10 || byts != 10*perRecord {
			t.Fatalf("peak in flight %d records, %d bytes while record 0 is held; want 10 records, %d bytes (%d each)",
				recs, byts, 10*perRecord, perRecord)
		}
		g.open(0)
		h.WaitCommitted("t", 0, 100)
	})
}
