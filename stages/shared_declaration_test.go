package stages_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A SharedBatcher created inside the builder (one per partition) fails the
// build of the second partition: "create it once, outside the builder".
func TestSharedBatcherCreatedPerPartitionFailsTheBuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			b := stages.NewSharedBatcher(w.write, 10, time.Second) // wrong: one per partition
			return b.Feed(stages.Map(in, recordString))
		})
		if err := h.Fake().Assign("t", 0); err != nil {
			t.Fatalf("first partition: %v", err)
		}
		if err := h.Fake().Assign("t", 1); err == nil {
			t.Fatal("second partition's build succeeded; want a BuildError")
		}
		err := h.Wait()
		var be *sluice.BuildError
		if !errors.As(err, &be) || be.Partition != 1 || !strings.Contains(err.Error(), "create it once, before pipeline.Run") {
			t.Fatalf("Run returned %v, want a BuildError for t/1 saying to create the batcher once", err)
		}
	})
}

// One batcher created before Run serves every partition, also after a
// partition is revoked and assigned again (a new graph at the same place).
func TestSharedBatcherCreatedOnceServesEveryPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := sharedWrites(t, 10, time.Second)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.Revoke("t", 0)
		h.Assign("t", 0)
		h.Send("t", 0, []byte("b"))
		h.Send("t", 1, []byte("c"))
		h.WaitCommitted("t", 0, 2)
		h.WaitCommitted("t", 1, 1)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	})
}

// Feeding one batcher twice in one partition's graph fails the build.
func TestSharedBatcherFedTwiceInOneGraphFailsTheBuild(t *testing.T) {
	var w writes
	b := stages.NewSharedBatcher(w.write, 10, time.Second)
	expectBuildError(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		branches := stages.Route(stages.Map(in, recordString), 2, func(v string) int { return len(v) % 2 })
		return pipeline.All(b.Feed(branches[0]), b.Feed(branches[1]))
	}, "used twice in one partition's graph")
}

// A batcher belongs to the first Run that uses it: a second Run's build
// fails.
func TestSharedBatcherInTwoRunsFailsTheSecondBuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		b := stages.NewSharedBatcher(w.write, 10, time.Second)
		first := sharedHarness(t, b)
		first.Assign("t", 0)
		second := sharedHarness(t, b)
		if err := second.Fake().Assign("t", 0); err == nil {
			t.Fatal("the second Run's build succeeded; want a BuildError")
		}
		err := second.Wait()
		if !strings.Contains(err.Error(), "already used by another pipeline.Run") {
			t.Fatalf("second Run returned %v, want a BuildError saying the batcher belongs to another Run", err)
		}
		if err := first.Stop(); err != nil {
			t.Fatalf("first Run: %v", err)
		}
	})
}

func recordString(_ context.Context, r sluice.Record) (string, error) {
	return string(r.Value), nil
}
