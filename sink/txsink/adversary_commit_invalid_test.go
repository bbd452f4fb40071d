package txsink_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A Commit refused with an error marked as a value's (a deferred
// constraint checked at COMMIT names no value) stops Run with an error
// saying so; nothing of the batch is written, committed or
// dead-lettered, and no ticket is completed twice.
func TestInvalidCommitErrorStopsRunNamingIt(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(map[bool]string{false: "at least once", true: "exactly once"}[eos], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := txsinktest.NewMemStore[int]()
				fk := sluice.Invalid(errors.New("deferred foreign key violated"))
				s.FailCommits(fk)
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
				err := r.Wait(t)
				if err == nil || !strings.Contains(err.Error(), "deferred foreign key violated") ||
					!strings.Contains(err.Error(), "not one value") || sluice.IsInvalid(err) {
					t.Fatalf("Run returned %v; want a permanent error naming the store's refusal of the transaction", err)
				}
				if got := f.Committed(topic, 0); got != -1 {
					t.Errorf("committed %d; want nothing (-1)", got)
				}
				if len(s.Rows()) != 0 || dl.Len() != 0 {
					t.Errorf("rows %v, dead letters %v; want none", s.Rows(), dl.Offsets(topic, 0))
				}
			})
		})
	}
}
