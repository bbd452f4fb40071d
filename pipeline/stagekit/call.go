package stagekit

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/internal/engine"
)

// Call calls fn for the value of it as a user function of stage s. It is
// the one path every stage takes to call the function its user gave it:
//
//   - no call once ctx is done (the partition was lost or its drain timed
//     out): Call returns context.Cause(ctx);
//   - the value is marked on pr for the stuck detector while fn runs;
//   - the call is timed and reported to the stage-call hooks, only when
//     some hook implements sluice.HookStageCall ([Stage.Observed]);
//   - a panic becomes a *sluice.PanicError (which s.Fail reports at the
//     value's offset, and which is never retried);
//   - a transient error is retried under the stage's retry policy
//     ([Stage.Retry]), never once ctx is done nor after the partition
//     started draining.
//
// The returned error is fn's last error (after the attempts are used up,
// wrapped to say so, see [Stage.Retry]), for the stage to pass to s.Fail.
// Call it from the goroutine that owns pr (one probe per goroutine, from
// s.Probe()); ctx is s.Context(). Calls for different values may run at
// once on different goroutines.
func Call[In, Out any](ctx context.Context, s *Stage, pr *Probe, it Item[In], fn func(context.Context, In) (Out, error)) (Out, error) {
	var out Out
	err := call(ctx, s, pr, it.Ticket, func() (err error) {
		out, err = fn(ctx, it.Value)
		return err
	})
	return out, err
}

// call is Call for an attempt function: try runs one attempt, and is
// called again for each retry (it resets what a failed attempt left).
func call(ctx context.Context, s *Stage, pr *Probe, t Ticket, try func() error) error {
	if ctx.Err() != nil {
		// The partition was lost or its drain timed out: no more calls.
		return context.Cause(ctx)
	}
	pr.Enter(t)
	defer pr.Leave()
	for attempt := 1; ; attempt++ {
		var err error
		if s.Observed() {
			start := time.Now()
			err = protect(try)
			s.Called(time.Since(start), err)
		} else {
			err = protect(try)
		}
		// No retry once ctx is done: the value can no longer complete
		// (Pool's workers see their emitter's failure this way).
		if err == nil || ctx.Err() != nil {
			return err
		}
		again, final := s.Retry(t, err, attempt)
		if !again {
			return final
		}
	}
}

// protect runs try once, turning a panic into a *sluice.PanicError.
func protect(try func() error) (err error) {
	returned := false
	defer engine.CatchPanicUnless(&returned, &err)
	err = try()
	returned = true
	return err
}

// Protect calls fn(ctx, v) once, turning a panic into a
// *sluice.PanicError: no timing, no stuck mark, no retry. It is for the
// small pure functions a stage is configured with (a predicate, a key, a
// weight, a route chooser); the function a stage exists to call goes
// through [Call].
func Protect[In, Out any](ctx context.Context, v In, fn func(context.Context, In) (Out, error)) (out Out, err error) {
	returned := false
	defer engine.CatchPanicUnless(&returned, &err)
	out, err = fn(ctx, v)
	returned = true
	return out, err
}
