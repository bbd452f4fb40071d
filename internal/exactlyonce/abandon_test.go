package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// A partition lost while its stage function ignores its context is
// abandoned after the exit grace; that stops Run. The function still
// runs, and produces through the transactional producer once it returns:
// whatever transaction is open then must not commit, or that output
// becomes visible while the record's offset stays uncommitted, and the
// record's next owner produces it again. Here the transaction aborted by
// the loss rewinds p1, whose records delivered again open a new
// transaction; the abandoned function produces "0-1" into it; the
// shutdown aborts it instead of committing, and Run's error says so.
func TestAbandonedFunctionOutputNeverCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		release := make(chan struct{})
		var stuck atomic.Bool
		d := newDriver(txn, Config{})
		_, stop := run(t, d, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Partition == 0 && r.Offset == 1 && stuck.CompareAndSwap(false, true) {
					<-release // ignores its context
				}
				txn.produce(fmt.Sprintf("%d-%d", r.Partition, r.Offset))
				return nil
			})
		}, pipeline.WithDrainTimeout(4*time.Second))
		d.fed(recs(0, 0, 1), recs(1, 0, 1))
		d.do(func(g *Group) {
			g.Offsets() // commits 0:1 1:1
			g.Deliver(tp(0), recs(0, 1, 2))
			g.Deliver(tp(1), recs(1, 1, 2))
		})
		synctest.Wait() // 0-1 stuck, 1-1 produced
		d.do(func(g *Group) {
			// A source's poll hands over what it fetched in the same turn.
			g.Lose([]sluice.TopicPartition{tp(0)})
			g.Deliver(tp(1), recs(1, 1, 2)) // p1 rewound: delivered again
			synctest.Wait()
			close(release) // the abandoned function returns and produces 0-1
			synctest.Wait()
		})
		err := stop()
		if !errors.Is(err, sluice.ErrAbandoned) || !errors.Is(err, ErrAborted) {
			t.Errorf("Run returned %v, want ErrAbandoned and ErrAborted (the last transaction aborted)", err)
		}
		visible, commits, _, _ := txn.state()
		if slices.Contains(visible, "0-1") {
			t.Fatalf("committed outputs %v (commits %v): 0-1, output of the abandoned function, committed while p0's offset stayed at 1",
				visible, commits)
		}
	})
}
