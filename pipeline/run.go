package pipeline

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// Builder builds the graph of one partition. Run calls it once each time a
// partition is assigned, from the source's poll goroutine, so it should
// only wire stages and return (no I/O that can block for long). Stages
// start after it returns. It must return an End of the graph fed by in.
type Builder func(p *Partition, in Stream[sluice.Record]) End

// Run consumes src until ctx is cancelled or something fails, building a
// graph with build for every partition src assigns.
//
// When ctx is cancelled, every partition is revoked gracefully (drained
// within the drain timeout, its completed offsets committed, its OnClose
// hooks run) and Run returns nil, or the source's error if its own
// shutdown failed. After the first failure Run shuts down the same way,
// committing only what completed, and returns that error; what fails
// during that shutdown is joined after it (errors.Join). Every error names
// what failed; use errors.As and errors.Is:
//
//   - An option error, before anything starts: "sluice: WithX(value): ..."
//     naming the option and the value (several joined), or a nil ctx,
//     src or build.
//   - The error of the dead-letter destination's start check, before the
//     source starts (see [sluice.StartChecker]; for the Kafka producers, a
//     missing dead-letter topic, wrapping [sluice.ErrMissingTopic]).
//   - *sluice.BuildError: the builder wired the graph wrong (a stream
//     consumed twice or never, no End, a stage's invalid argument) or
//     panicked (Err is then the *sluice.PanicError).
//   - *sluice.StageError naming the stage, the partition and the offset: a
//     stage function returned a [sluice.Permanent] error or panicked (Err is
//     a *sluice.PanicError), a transient error failed every attempt of the
//     retry policy (its text ends with "(failed after N attempts; ...)"), or
//     [sluice.Invalid] was returned with no dead-letter destination (wraps
//     [sluice.ErrNoDeadLetter]); an OnClose hook failed or panicked (Stage
//     "OnClose", Offset -1); the dead-letter function kept failing or
//     panicked, or was still failing when a shutdown drained its partition
//     (wraps [sluice.ErrNotDeadLettered]; joined after the first error if
//     there is one); a stage used a ticket with no reference left: it
//     completed a value and still passed it on, or completed one twice (wraps
//     stagekit.ErrTicketCompleted; Offset -1 once the record left; nothing
//     more of the partition is committed).
//   - *sluice.StageError wrapping [sluice.ErrAbandoned], naming the stage,
//     the partition and the offset where the partition's committed offset
//     stopped: a function ignored its context and was abandoned (see "Bounded
//     shutdown" below); joined after the first error if there is one.
//   - An error wrapping [sluice.ErrDeadLetterLimit], naming the partition,
//     the offset and the limit: a partition's invalid records tripped
//     [WithDeadLetterLimit].
//   - "sluice: source failed: ..." wrapping the source's error: a fatal
//     client failure (Run then stops every graph without committing), or a
//     failure of the source's own shutdown after the graphs drained (for
//     the Kafka source, the final commit or closing the client; see
//     source.Source.Run), joined after the first error if there is one.
//
// Bounded shutdown: Run returns whatever user code does. A revoke or
// shutdown drains each partition for at most the drain timeout
// ([WithDrainTimeout]), then cancels its context; a lost partition's
// context is cancelled at once. Functions must then return: a goroutine
// still running a quarter of the drain timeout (at least 1 s) later (the
// exit grace) is abandoned, nothing past the partition's first unfinished
// record is committed, and Run stops with a *sluice.StageError wrapping
// [sluice.ErrAbandoned]. An
// OnClose hook gets its own context, which expires after the drain
// timeout, plus the exit grace. So a shutdown takes at most the drain
// timeout plus the exit grace (plus the OnClose hooks of the partitions
// that drained, each bounded the same way), then what the source needs to
// commit and close (for the Kafka source, at most its Config.CloseTimeout).
//
// Run returns only after every goroutine it started has exited, except
// the goroutines of the functions it abandoned: Go cannot stop them.
func Run(ctx context.Context, src sluice.Source, build Builder, opts ...Option) error {
	if ctx == nil {
		return errors.New("sluice: Run needs a context (context.Background() or a signal.NotifyContext); got nil")
	}
	if src == nil {
		return errors.New("sluice: Run needs a Source (source.NewSource, franz.NewSource, franz.NewShareSource, follow.New around one of them, or testkit.NewFake in tests); got nil")
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
	warnLongRetries(cfg)
	if cfg.deadLetterCheck != nil {
		if err := cfg.deadLetterCheck(ctx); err != nil {
			return err
		}
	}
	return engine.Run(ctx, cfg.Config, adapt(build), func(ctx context.Context, g *engine.Group) error {
		return src.Run(ctx, g)
	})
}

// adapt returns the engine's builder calling build with this package's
// types: one Partition per assignment, the rest converted at no cost.
func adapt(build Builder) engine.Builder {
	return func(p *engine.Partition, in engine.Stream[sluice.Record]) engine.End {
		return build(newPartition(p), Stream[sluice.Record]{in}).e
	}
}

// The engine's group is what Run hands to Source.Run, a share group's
// source included.
var _ sluice.AckGroup = (*engine.Group)(nil)

// warnLongRetries logs a warning when the retry policy of Run can wait
// longer than the drain timeout for one value: that value holds its
// partition's commits that long before Run stops, and a revoke that waits
// for a shared batch's write being retried times out.
func warnLongRetries(cfg config) {
	if b := cfg.Retry.MaxBackoff(); b > cfg.DrainTimeout {
		cfg.Logger.Warn("sluice: the retry policy waits longer in all than the drain timeout: a value that keeps failing holds "+
			"its partition's commits that long before Run stops, and a revoke waiting for a shared batch's write under retry "+
			"outlasts the drain; lower RetryPolicy.Attempts or Max (WithRetry), or raise WithDrainTimeout",
			"retry_backoff", b.String(), "drain_timeout", cfg.DrainTimeout.String())
	}
}
