package pipeline

import (
	"context"
	"errors"
	"fmt"
)

// Run consumes src until ctx is cancelled or a stage fails, building a
// graph with build for every partition src assigns.
//
// When ctx is cancelled, every partition is revoked gracefully (drained
// within the drain timeout, its completed offsets committed, its OnClose
// hooks run) and Run returns nil. When a stage fails (an error that is not
// [Invalid], a panic, or Invalid with no dead-letter destination), the
// dead-letter function fails or panics, an OnClose hook fails or panics,
// or the builder fails, Run shuts down the same way, committing only what
// completed, and returns that first error (a *StageError or *BuildError).
// Dead-letter deliveries still failing when a shutdown drains their
// partition are reported too (a *StageError wrapping [ErrNotDeadLettered],
// joined after the first error if there is one).
// When the source fails, Run stops every graph without committing and
// returns the source's error. Run returns only after every goroutine it
// started has exited.
func Run(ctx context.Context, src Source, build Builder, opts ...Option) error {
	if src == nil {
		return errors.New("sluice: Run needs a Source (source.NewKafka or a testkit fake); got nil")
	}
	if build == nil {
		return errors.New("sluice: Run needs a Builder; got nil")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rt := newRuntime(ctx, cancel, cfg, build)
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

	srcErr := src.Run(runCtx, rt)
	// A source must shut its partitions down before returning; whatever it
	// left is stopped here without committing.
	rt.Lose(rt.m.Owned())
	if err := rt.fatal(); err != nil {
		return err
	}
	if srcErr != nil {
		return fmt.Errorf("sluice: source failed: %w", srcErr)
	}
	return nil
}
