package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// A revoke whose barrier waits for a record that then fails (a stage
// error stops Run: here a produce refused as a fenced zombie's is) gives up
// at once instead of holding the poll loop, and the partitions the revoke
// lets go, for the whole drain timeout: the transaction aborts without a
// rewind (Run is stopping) and Run returns the stage error and ErrAborted.
// Before, a fenced franz member held its revoked partitions for the drain
// timeout, long enough for kfake to time out the transaction its refused
// produce had opened and fence its successor (exactlyonce_franz_test.go).
func TestRevokeBarrierGivesUpOnStageError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("1-0-a")
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			outs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]string, error) {
				return []string{fmt.Sprintf("%d-%d-a", r.Partition, r.Offset), fmt.Sprintf("%d-%d-b", r.Partition, r.Offset)}, nil
			})
			return stages.Each(outs, func(ctx context.Context, out string) error {
				if err := gs.wait(ctx, out); err != nil {
					return err
				}
				if out == "1-0-a" {
					return sluice.Permanent(errors.New("INVALID_PRODUCER_EPOCH"))
				}
				txn.produce(out)
				return nil
			})
		}
		d := newDriver(txn, Config{})
		_, stop := run(t, d, build, pipeline.WithDrainTimeout(testBarrier))
		d.fed(recs(0, 0, 2), recs(1, 0, 1))
		start := time.Now()
		done := d.start(func(g *Group) { g.Revoke([]sluice.TopicPartition{tp(0)}) })
		synctest.Wait() // the barrier waits for 1-0-a
		gs.open("1-0-a")
		<-done
		if took := time.Since(start); took >= testBarrier/2 {
			t.Errorf("the revoke took %v, want it to give up at the stage error, well before the drain timeout %v", took, testBarrier)
		}
		err := stop()
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, ErrAborted) {
			t.Fatalf("Run returned %v, want the stage error and ErrAborted", err)
		}
		if _, commits, aborts, misplaced := txn.state(); len(commits) != 0 || aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("commits %v aborts %d misplaced %v; want nothing committed, one abort", commits, aborts, misplaced)
		}
		if r := txn.rewound(); len(r) != 0 {
			t.Fatalf("rewinds %v, want none: Run is stopping", r)
		}
	})
}
