package testkit_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// discard is a graph that completes every record.
func discard(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(in)
}

// sendAndAssign sends n values (testkit.Values(n)) to t/0 of fake, then
// assigns t/0; an error of either fails t.
func sendAndAssign(t testing.TB, fake *testkit.Fake, n int) {
	t.Helper()
	if err := fake.Send("t", 0, testkit.Values(n)...); err != nil {
		t.Fatal(err)
	}
	if err := fake.Assign("t", 0); err != nil {
		t.Fatal(err)
	}
}

// collectOffsets builds graphs that append each record's offset to
// *seen (one partition at a time: no lock).
func collectOffsets(seen *[]int64) pipeline.Builder {
	return func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			*seen = append(*seen, r.Offset)
			return nil
		})
	}
}

// stopClean stops h and fails the test if Run returned an error.
func stopClean(t *testing.T, h *testkit.Harness) {
	t.Helper()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
}
