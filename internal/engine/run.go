package engine

import (
	"context"
	"errors"
	"fmt"
)

// Run is pipeline.Run once its arguments are checked and its options
// applied: it creates the [Group] of the run, hands it to src (which calls
// its methods from its poll goroutine until ctx is done or it fails), then
// stops whatever partitions src left running, without committing, and
// returns the first fatal error joined with those recorded during
// shutdown and with src's error, else src's error, else nil. It returns
// only after every goroutine it started has exited, except those of user
// functions that ignored their context, which it abandoned (abandon.go)
// and reported in the error.
func Run(ctx context.Context, cfg Config, build Builder, src func(ctx context.Context, g *Group) error) error {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rt := newGroup(ctx, cancel, cfg, build)
	if rt.watch != nil {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			rt.watch.run(stop)
		}()
		defer func() {
			close(stop)
			<-done
		}()
	}

	srcErr := src(runCtx, rt)
	// A source must shut its partitions down before returning; whatever it
	// left is stopped here without committing.
	rt.Lose(rt.m.Owned())
	if srcErr != nil {
		srcErr = fmt.Errorf("sluice: source failed: %w", srcErr)
	}
	if err := rt.fatal(); err != nil {
		// The source may have failed in the shutdown that the fatal
		// error started (a final commit): that is reported too.
		return errors.Join(err, srcErr)
	}
	return srcErr
}
