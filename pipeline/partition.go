package pipeline

import "github.com/sluice-go/sluice/internal/engine"

// Partition is the partition a graph is built for, handed to the
// [Builder]; its context and close hooks are the graph's lifecycle. It has
// the fields Topic (string) and Partition (int32, the partition number, as
// in [sluice.TopicPartition] and [sluice.Record]) and two methods:
//
//   - Context() context.Context returns the partition's context. It is done
//     when the graph must stop: after a graceful revoke drained (cause
//     [sluice.ErrRevoked]), when the drain timed out
//     ([sluice.ErrDrainTimeout]), when the partition was lost
//     ([sluice.ErrLost]), or when a stage misused a ticket (the
//     *sluice.StageError wrapping stagekit.ErrTicketCompleted that stops
//     Run). Values of the context given to [Run] are visible through it;
//     Run's own cancellation is not (shutdown drains gracefully first).
//   - OnClose(fn func(ctx context.Context) error) registers fn to run when
//     the graph is taken away: after every stage goroutine exited (drained,
//     timed out or lost) and before the final offset is reported to the
//     source. Hooks run in reverse order of registration, one at a time; ctx
//     expires after the drain timeout. An error or a panic in a hook stops
//     Run (the other hooks still run): Run returns a *sluice.StageError whose
//     Stage is "OnClose", naming the partition (Offset -1), whose Err is the
//     hook's error or a *sluice.PanicError. A hook still running a quarter of
//     the drain timeout (at least 1 s) after ctx expired is abandoned: Run
//     stops with such an error wrapping [sluice.ErrAbandoned], and the hooks
//     registered before it do not run; nor do the hooks of a graph whose
//     stage goroutines were abandoned. OnClose may be called from the builder
//     or from a stage, from any goroutine.
//
// Only Run creates Partitions.
type Partition = engine.Partition
