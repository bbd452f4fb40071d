package pipeline

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice/internal/engine"
)

// Builder builds the graph of one partition. Run calls it once each time a
// partition is assigned, from the source's poll goroutine, so it should
// only wire stages and return (no I/O that can block for long). Stages
// start after it returns. It must return an End of the graph fed by in.
type Builder func(p *Partition, in Stream[Record]) End

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
	return engine.Run(ctx, cfg.Config, engine.Builder(build), func(ctx context.Context, g *engine.Group) error {
		return src.Run(ctx, g)
	})
}

// The engine's group is what Run hands to Source.Run.
var _ Group = (*engine.Group)(nil)
