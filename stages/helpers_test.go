package stages_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// gate is a stage function (wait) that holds the records it picks until
// the test opens it or the stage's context ends; closed gets a signal
// each time it starts holding one.
type gate struct {
	hold   func(sluice.Record) bool
	closed chan struct{}
	open   chan struct{}
}

// holdOffset returns a gate that holds the record at offset at.
func holdOffset(at int64) *gate {
	return newGate(func(r sluice.Record) bool { return r.Offset == at })
}

// holdValue returns a gate that holds the records of value v.
func holdValue(v string) *gate {
	return newGate(func(r sluice.Record) bool { return string(r.Value) == v })
}

func newGate(hold func(sluice.Record) bool) *gate {
	return &gate{hold: hold, closed: make(chan struct{}, 16), open: make(chan struct{})}
}

func (g *gate) wait(ctx context.Context, r sluice.Record) error {
	if g.hold(r) {
		g.closed <- struct{}{}
		select {
		case <-g.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// then returns a stage function that waits at g, then calls next.
func (g *gate) then(next func(context.Context, sluice.Record) error) func(context.Context, sluice.Record) error {
	return func(ctx context.Context, r sluice.Record) error {
		if err := g.wait(ctx, r); err != nil {
			return err
		}
		return next(ctx, r)
	}
}

// expectBuildError runs build for partition t/3 and checks that Run fails
// with a *sluice.BuildError for that partition whose text holds every
// string of want.
func expectBuildError(t *testing.T, build builder, want ...string) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, build)
		if err := h.Fake().Assign("t", 3); err == nil {
			t.Fatal("Assign succeeded; want the build to fail")
		}
		err := h.Wait()
		var be *sluice.BuildError
		if !errors.As(err, &be) || be.Topic != "t" || be.Partition != 3 {
			t.Fatalf("Run returned %v, want a *sluice.BuildError for t/3", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("Run returned %q, want it to mention %q", err, w)
			}
		}
	})
}

// failsAt assigns t/0, sends it n values and checks that Run stops
// with a StageError at offset, wrapping a PanicError when panicked; it
// returns the StageError.
func failsAt(t *testing.T, h *testkit.Harness, n int, offset int64, panicked bool) *sluice.StageError {
	t.Helper()
	h.Assign("t", 0)
	h.Send("t", 0, testkit.Values(n)...)
	err := h.Wait()
	var se *sluice.StageError
	if !errors.As(err, &se) || se.Offset != offset {
		t.Fatalf("Run returned %v, want a StageError at offset %d", err, offset)
	}
	var pe *sluice.PanicError
	if panicked && !errors.As(err, &pe) {
		t.Fatalf("Run returned %v, want a StageError with a PanicError", err)
	}
	return se
}

// checkCommitted checks t/0's committed offset; why says why want is
// right.
func checkCommitted(t *testing.T, h *testkit.Harness, want int64, why string) {
	t.Helper()
	if got := h.Committed("t", 0); got != want {
		if why != "" {
			why = " (" + why + ")"
		}
		t.Fatalf("committed %d, want %d%s", got, want, why)
	}
}

// sharedWrites returns the writes of a new SharedBatcher of size and
// maxWait and a Harness whose graphs feed it (sharedHarness).
func sharedWrites(t *testing.T, size int, maxWait time.Duration) (*writes, *testkit.Harness) {
	t.Helper()
	w := &writes{}
	return w, sharedHarness(t, stages.NewSharedBatcher(w.write, size, maxWait))
}

// stopClean stops h and fails the test if Run returned an error.
func stopClean(t *testing.T, h *testkit.Harness) {
	t.Helper()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
}

// deadLetterOffsets records, per partition, the offsets a Run
// dead-lettered, in the order it did.
type deadLetterOffsets struct {
	mu sync.Mutex
	m  map[int32][]int64
}

// option is the dead-letter destination that records them.
func (d *deadLetterOffsets) option() pipeline.Option {
	return pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.m == nil {
			d.m = map[int32][]int64{}
		}
		d.m[dl.Record.Partition] = append(d.m[dl.Record.Partition], dl.Record.Offset)
		return nil
	})
}

// of returns the offsets dead-lettered from partition p.
func (d *deadLetterOffsets) of(p int32) []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.m[p])
}

// assignPartitions assigns partitions 0 to n-1 of topic "t" and returns
// them.
func assignPartitions(h *testkit.Harness, n int) []int32 {
	ps := make([]int32, n)
	for i := range ps {
		ps[i] = int32(i)
	}
	h.Assign("t", ps...)
	return ps
}
