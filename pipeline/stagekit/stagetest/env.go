package stagetest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/testkit"
)

const (
	// topic is the topic of the suite's records; they go to partition 0.
	topic = "stagetest"
	// drainTimeout is the drain timeout of the suite's Runs. Their exit
	// grace is a quarter of it.
	drainTimeout = 8 * time.Second
	// minExitGrace is the shortest exit grace of any Run: a loss that
	// takes longer made Run abandon the stage.
	minExitGrace = time.Second
	// patience is how long (in the bubble's fake time, which passes only
	// while every goroutine is blocked) the suite waits for the stage to
	// emit, or for a commit, before it fails the check: a stage must not
	// hold values longer.
	patience = time.Hour
)

// retry is the suite's retry policy: its backoff (0.7s in all) fits in
// the drain timeout.
var retry = sluice.RetryPolicy{Attempts: 4, Initial: 100 * time.Millisecond, Max: time.Second}

// env is one check's Run: the stage between the suite's input stage and
// sinks, over a testkit.Harness, inside the check's synctest bubble.
type env[T, U any] struct {
	t      *testing.T
	s      *Stage[T, U]
	clause string
	plan   plan
	n      int
	rec    *recorder[U] // nil for a stage that ends the graph
	dl     *testkit.DeadLetters
	h      *testkit.Harness
	fed    atomic.Int64 // input values made
	before map[string]goroutine
	graph  map[string]goroutine // goroutines before the graph was built
	runErr error
	done   bool // Run was stopped
}

// start runs the stage, with its outputs held (hold) or completed as they
// arrive, and sends it Inputs records.
func start[T, U any](t *testing.T, s *Stage[T, U], clause string, hold bool) *env[T, U] {
	e := &env[T, U]{t: t, s: s, clause: clause, plan: s.plan(), n: s.inputs(), dl: testkit.NewDeadLetters()}
	if s.End == nil {
		e.rec = newRecorder(s.Origin, e.n, hold)
	}
	if s.BeforeRun != nil {
		s.BeforeRun()
	}
	e.before = bubbleGoroutines()
	logs := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	e.h = testkit.New(t, e.build, e.dl.Option(), pipeline.WithLogger(logs),
		pipeline.WithDrainTimeout(drainTimeout), pipeline.WithRetry(retry))
	synctest.Wait()
	e.graph = bubbleGoroutines()
	e.h.Assign(topic, 0)
	vals := make([][]byte, e.n)
	for i := range vals {
		vals[i] = fmt.Appendf(nil, "%d", i)
	}
	e.h.Send(topic, 0, vals...)
	return e
}

// build is the suite's builder: records become Input values, the stage
// runs on them, the suite's sinks take its outputs.
func (e *env[T, U]) build(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	spec := stagekit.StageSpec{Name: "stagetest.input", Kind: "stagetest.input"}
	vals := stagekit.Transform(in, spec, func(_ context.Context, r sluice.Record, emit *stagekit.Emitter[T]) error {
		e.fed.Add(1)
		emit.Emit(e.s.Input(int(r.Offset)))
		return nil
	})
	switch {
	case e.s.End != nil:
		return e.s.End(vals)
	case e.s.Build != nil:
		return e.rec.sink(e.s.Build(vals))
	}
	outs := e.s.Fan(vals)
	ends := make([]pipeline.End, len(outs))
	for i, o := range outs {
		ends[i] = e.rec.sink(o)
	}
	return pipeline.All(ends...)
}

// errorf fails the check with a message naming the stage and the clause.
func (e *env[T, U]) errorf(format string, args ...any) {
	e.t.Helper()
	e.t.Errorf("%s: %s: "+format, append([]any{e.s.Name, e.clause}, args...)...)
}

// committed is the partition's committed offset, 0 when nothing was.
func (e *env[T, U]) committed() int64 {
	return max(e.h.Committed(topic, 0), 0)
}

// waitFor waits until cond holds, advancing the bubble's clock only while
// everything is blocked; it fails the check, naming what, when Run
// returns first or after patience.
func (e *env[T, U]) waitFor(what string, cond func() bool) bool {
	e.t.Helper()
	var changed chan struct{}
	if e.rec != nil {
		changed = e.rec.changed
	}
	deadline := time.Now().Add(patience)
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			e.errorf("%s: not within %v (committed %d)", what, patience, e.committed())
			return false
		}
		timer := time.NewTimer(left)
		select {
		case <-changed:
		case <-e.h.Fake().Changed():
		case <-e.h.Fake().Stopped():
			timer.Stop()
			if cond() {
				return true
			}
			e.errorf("Run returned %v before %s", e.stop(), what)
			return false
		case <-timer.C:
		}
		timer.Stop()
	}
	return true
}

// waitCommitted waits until the committed offset reaches want, lets
// everything settle and checks that it is exactly want.
func (e *env[T, U]) waitCommitted(want int64, why string) bool {
	e.t.Helper()
	if !e.waitFor(fmt.Sprintf("commit %d (%s)", want, why), func() bool { return e.committed() >= want }) {
		return false
	}
	synctest.Wait()
	if got := e.committed(); got != want {
		e.errorf("committed %d, want exactly %d (%s)", got, want, why)
		return false
	}
	return true
}

// stop stops Run once and returns its error.
func (e *env[T, U]) stop() error {
	if !e.done {
		e.done = true
		e.runErr = e.h.Stop()
	}
	return e.runErr
}

// finish stops Run, which must return nil, and checks that no goroutine
// started since the check began is left.
func (e *env[T, U]) finish() {
	e.t.Helper()
	if !e.done {
		if err := e.stop(); err != nil {
			e.errorf("Run returned %v, want nil", err)
		}
	}
	synctest.Wait()
	if left := leftGoroutines(e.before); len(left) > 0 {
		e.errorf("%d goroutines still running after Run returned:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// graphLeft checks that no goroutine started since the graph was built
// is left, once the partition was taken away (what).
func (e *env[T, U]) graphLeft(what string) {
	e.t.Helper()
	synctest.Wait()
	if left := leftGoroutines(e.graph); len(left) > 0 {
		e.errorf("%d goroutines of the graph still running after the %s returned:\n%s", len(left), what, strings.Join(left, "\n\n"))
	}
}
