package txsink_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// panickyStore is a MemStore whose transactions panic in Commit (a
// driver bug), after StoreOffset locked the partition's position.
type panickyStore struct{ *txsinktest.MemStore[int] }

func (p panickyStore) Begin(ctx context.Context) (txsink.Tx[int], error) {
	tx, err := p.MemStore.Begin(ctx)
	return panickyTx{tx}, err
}

type panickyTx struct{ txsink.Tx[int] }

func (panickyTx) Commit(context.Context) error { panic("driver bug") }

// A panic in the store's Commit stops Run with a PanicError; the
// transaction must still be rolled back (Tx.Rollback "is called after
// any error"), or it keeps the partition's position locked and the next
// owner's Claim waits forever.
func TestAdversaryPanicInCommitReleasesTheTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		w := txsink.New[int](panickyStore{s}, txsink.Options[int]{ExactlyOnce: true, BatchSize: 2})
		f := testkit.NewFake()
		f.UseOffsetStore(w, group)
		r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return w.Write(toInt(in))
		})
		must(t, f.Send(topic, 0, values(0, 2)...))
		must(t, f.Assign(topic, 0))
		var pe *sluice.PanicError
		if err := r.Wait(t); !errors.As(err, &pe) {
			t.Fatalf("Run returned %v; want a PanicError", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.Claim(ctx, group, []sluice.TopicPartition{{Topic: topic}}); err != nil {
			t.Fatalf("the next owner's Claim after the panic: %v; want it to succeed", err)
		}
	})
}
