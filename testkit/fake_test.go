package testkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func discard(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
	return stages.Discard(in)
}

func TestSendRecordsRejectsOffsetsThatDoNotIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, discard)
		h.Send("t", 0, []byte("a"), []byte("b")) // offsets 0, 1
		err := h.Fake().SendRecords(pipeline.Record{Topic: "t", Offset: 5}, pipeline.Record{Topic: "t", Offset: 1})
		if err == nil || !strings.Contains(err.Error(), "t/0 at offset 1 does not follow offset 5") {
			t.Fatalf("SendRecords returned %v", err)
		}
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 2)
		synctest.Wait()
		if got := h.Committed("t", 0); got != 2 {
			t.Fatalf("committed %d: the rejected records must not have been appended", got)
		}
	})
}

func TestReassignRedeliversFromTheCommittedOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []int64
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r pipeline.Record) error {
				seen = append(seen, r.Offset)
				return nil
			})
		})
		h.Send("t", 0, []byte("a"), []byte("b"))
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 2)
		h.Revoke("t", 0)
		h.Send("t", 0, []byte("c"))
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 3)
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 3 || seen[2] != 2 {
			t.Fatalf("saw offsets %v, want [0 1 2]", seen)
		}
	})
}

func TestControlAfterStopReportsErrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, discard)
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := h.Fake().Send("t", 0, []byte("x")); !errors.Is(err, testkit.ErrStopped) {
			t.Fatalf("Send after Stop returned %v, want ErrStopped", err)
		}
		if err := h.Stop(); err != nil {
			t.Fatalf("second Stop returned %v", err)
		}
	})
}
