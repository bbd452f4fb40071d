package txsink_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// After a graceful revoke the store's position is the partition's final
// one, past a record dead-lettered after the last rows were written, so
// the next owner neither writes a row again nor dead-letters again.
func TestGracefulRevokeStoresTheFinalPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		build := func(w *txsink.Writer[int]) pipeline.Builder {
			return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return w.Write(stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) {
					if string(r.Value) == "bad" {
						return 0, sluice.Invalid(errors.New("bad record"))
					}
					return strconv.Atoi(string(r.Value))
				}))
			}
		}
		log := [][]byte{[]byte("0"), []byte("1"), []byte("2"), []byte("bad")}
		for i, want := range []int{1, 0} {
			w := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 3})
			f := testkit.NewFake()
			f.UseOffsetStore(w, group)
			dl := testkit.NewDeadLetters()
			r := testkit.Start(t, f, build(w), dl.Option())
			must(t, f.Send(topic, 0, log...))
			must(t, f.Assign(topic, 0))
			if i == 0 {
				f.WaitCommitted(t, topic, 0, 4)
			}
			must(t, f.Revoke(topic, 0))
			if got := dl.Len(); got != want {
				t.Fatalf("member %d: %d dead letters; want %d", i+1, got, want)
			}
			if p := position(t, s, 0); p.Next != 4 || p.Written != 2 {
				t.Fatalf("member %d: position after the revoke %+v; want Next 4, Written 2", i+1, p)
			}
			must(t, r.Stop(t))
		}
		sameInts(t, "rows", s.Rows(), []int{0, 1, 2})
	})
}
