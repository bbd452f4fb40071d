package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// sink collects what reaches an End, per partition, in order.
type sink struct {
	mu  sync.Mutex
	got map[int32][]int64
}

func (s *sink) add(p int32, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = map[int32][]int64{}
	}
	s.got[p] = append(s.got[p], off)
}

func (s *sink) of(p int32) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.got[p]...)
}

func TestMapEachCommitsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out sink
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			offs := stages.Map(in, func(_ context.Context, r sluice.Record) (int64, error) { return r.Offset, nil })
			return stages.Each(offs, func(_ context.Context, o int64) error { out.add(p.Partition, o); return nil })
		})
		h.Assign("events", 0, 1)
		h.Send("events", 0, values(1000)...)
		h.Send("events", 1, values(3)...)
		h.WaitCommitted("events", 0, 1000)
		h.WaitCommitted("events", 1, 3)
		synctest.Wait()
		if got := h.Committed("events", 0); got != 1000 {
			t.Fatalf("committed %d, want 1000", got)
		}
		got := out.of(0)
		if len(got) != 1000 {
			t.Fatalf("processed %d, want 1000", len(got))
		}
		for i, o := range got {
			if o != int64(i) {
				t.Fatalf("value %d has offset %d: order broken", i, o)
			}
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
	})
}
