package txsink_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A Commit refused as the values' fault (a deferred constraint checked at
// COMMIT: sink/postgres marks SQLSTATE 23 from Commit with sluice.Invalid)
// must end with every record either written once or dead-lettered, and
// Run going on; not with the first value dead-lettered and the batch kept.
func TestAdversaryInvalidCommitError(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(map[bool]string{false: "at least once", true: "exactly once"}[eos], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := txsinktest.NewMemStore[int]()
				// The first three commits break a deferred constraint.
				fk := sluice.Invalid(errors.New("deferred foreign key violated"))
				s.FailCommits(fk, fk, fk)
				w := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: eos, BatchSize: 4})
				dl := testkit.NewDeadLetters()
				f := testkit.NewFake()
				if eos {
					f.UseOffsetStore(w, group)
				}
				r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return w.Write(toInt(in))
				}, dl.Option())
				must(t, f.Send(topic, 0, values(0, 8)...))
				must(t, f.Assign(topic, 0))
				for range 5 {
					linger(t)
				}
				select {
				case <-r.Done():
					t.Fatalf("Run stopped: %v", r.Err())
				default:
				}
				if got := f.Committed(topic, 0); got != 8 {
					t.Errorf("committed %d; want 8", got)
				}
				rows := s.Rows()
				dead := dl.Offsets(topic, 0)
				seen := map[int]int{}
				for _, v := range rows {
					seen[v]++
				}
				for _, off := range dead {
					seen[int(off)]++
				}
				for v := range 8 {
					if seen[v] != 1 {
						t.Errorf("value %d: written or dead-lettered %d times (rows %v, dead letters %v); want once", v, seen[v], rows, dead)
					}
				}
				must(t, r.Stop(t))
			})
		})
	}
}
