package stagekit_test

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/testkit"
)

// Stage.Partition is the *pipeline.Partition the builder got, for every
// stage of the graph; a new assignment gets a new one.
func TestStagePartitionIsTheBuildersPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type seen struct{ built, first, second *pipeline.Partition }
		got := make(chan seen, 2)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			var first *pipeline.Partition
			mid := stagekit.AddStage(in, stagekit.StageSpec{Name: "first"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record], out *stagekit.Outlet[sluice.Record]) error {
				first = s.Partition()
				return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[sluice.Record]) error {
					if !out.Send(append(out.Buffer(), chunk...)) {
						return stagekit.ErrStop
					}
					return nil
				})
			})
			return stagekit.AddEnd(mid, stagekit.StageSpec{Name: "second"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record]) error {
				err := stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[sluice.Record]) error {
					for _, it := range chunk {
						s.Done(it.Ticket)
					}
					return nil
				})
				got <- seen{built: p, first: first, second: s.Partition()}
				return err
			})
		})
		for round := range int64(2) {
			h.Assign("t", 0)
			h.Send("t", 0, []byte("a"))
			h.WaitCommitted("t", 0, round+1)
			h.Revoke("t", 0)
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
		a, b := <-got, <-got
		for _, s := range []seen{a, b} {
			if s.built == nil || s.first != s.built || s.second != s.built || s.built.Topic != "t" || s.built.Partition != 0 {
				t.Fatalf("the builder got %p, the stages %p and %p; want the builder's t/0 for both", s.built, s.first, s.second)
			}
		}
		if a.built == b.built {
			t.Fatal("two assignments got the same *pipeline.Partition")
		}
	})
}
