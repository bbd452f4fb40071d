package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// budgetObserver keeps the last InFlight report and checks every one
// against the limits; it counts OnRecordsCompleted calls so that the
// completion reporter (which returns the budget after the hook) runs.
type budgetObserver struct {
	t                 *testing.T
	maxRecs, maxBytes int64
	mu                sync.Mutex
	records, bytes    int64
	completed         int
}

func (o *budgetObserver) OnInFlight(records, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if records < 0 || bytes < 0 || records > o.maxRecs || (bytes > o.maxBytes && records != 1) {
		o.t.Errorf("in flight %d records, %d bytes: outside [0, %d] and [0, %d]", records, bytes, o.maxRecs, o.maxBytes)
	}
	o.records, o.bytes = records, bytes
}

func (o *budgetObserver) OnRecordsCompleted(_ sluice.TopicPartition, n int, _ int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.completed += n
}

// The budget is exact: with deliveries that fit whole, in part, or not at
// all, records heavier than the byte limit, values dropped by a Filter,
// records dead-lettered by a Pool, a partition revoked while records of
// it wait for admission, and a completion hook (so that completions are
// reported before their budget goes back), every record and byte admitted
// comes back once: the last InFlight report after Run is 0 records, 0
// bytes.
func TestBudgetReturnsToZeroAfterMixedDeliveries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxRecs = 9
		maxBytes := 4 * (pipeline.RecordOverhead + 100)
		obs := &budgetObserver{t: t, maxRecs: maxRecs, maxBytes: maxBytes}
		tps := []sluice.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}
		next := map[sluice.TopicPartition]int64{}
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign(tps); err != nil {
				return err
			}
			for round := range 12 {
				for i, tp := range tps {
					if round >= 6 && i == 1 {
						continue // revoked
					}
					n := 1 + (round+i)%5
					recs := make([]sluice.Record, n)
					for j := range recs {
						size := [...]int{0, 10, 100, 50, 1000}[(round+j)%5]
						recs[j] = sluice.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: next[tp], Value: make([]byte, size)}
						next[tp]++
					}
					g.Deliver(tp, recs)
				}
				synctest.Wait()
				if round == 5 {
					g.Revoke(tps[1:2])
				}
			}
			g.Revoke([]sluice.TopicPartition{tps[0], tps[2]})
			return nil
		})
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			kept := stages.Filter(in, func(r sluice.Record) bool { return r.Offset%7 != 3 })
			out := stages.Pool(kept, 3, func(_ context.Context, r sluice.Record) (int64, error) {
				time.Sleep(time.Millisecond)
				if r.Offset%5 == 0 {
					return 0, sluice.Invalid(errors.New("bad"))
				}
				return r.Offset, nil
			})
			return stages.Each(out, func(context.Context, int64) error { return nil })
		}
		err := pipeline.Run(context.Background(), src, build,
			pipeline.WithMaxInFlight(maxRecs), pipeline.WithMaxInFlightBytes(maxBytes),
			pipeline.WithHooks(obs),
			pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if obs.completed == 0 {
			t.Fatal("no OnRecordsCompleted call: the test did not exercise the reporter")
		}
		if obs.records != 0 || obs.bytes != 0 {
			t.Fatalf("after Run: last InFlight report %d records, %d bytes; want 0 and 0", obs.records, obs.bytes)
		}
	})
}
