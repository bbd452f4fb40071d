package stagekit

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-go/sluice/pipeline"
)

// Sink adds a terminal stage that calls fn for every value, in order,
// from one goroutine, through [Call] (like [Transform]); an error goes to
// [Stage.Fail]. A value is done once fn returned nil for it, and the
// commit never waits for the rest of its chunk:
//
//   - while calls are slow (over 10µs on average over the stage's last
//     chunk, and in its first chunk), each value completes as soon as its
//     call returned;
//   - while they are fast, values complete in groups of up to 64,
//     each group as soon as its last call returned, and what returned
//     before a failed value or the end of a chunk completes then: one
//     completion, with its lock, budget release and completion hooks,
//     instead of one per value, for a commit that waits for at most
//     63 fast calls more.
//
// A nil fn fails the build naming the stage.
func Sink[In any](in pipeline.Stream[In], spec StageSpec, fn func(ctx context.Context, v In) error) pipeline.End {
	if fn == nil && spec.Problem == nil {
		spec.Problem = errors.New("the function is nil")
	}
	return AddEnd(in, spec, func(s *Stage, inl *Inlet[In]) error {
		k := sinker[In]{s: s, ctx: s.Context(), pr: s.Probe(), fn: fn, group: 1}
		return ForEachChunk(s, inl, k.chunk)
	})
}

const (
	// fastCall is the average call below which a Sink completes its values
	// in groups: a completion costs about as much as a fast call.
	fastCall = 10 * time.Microsecond
	// sinkGroup is the most values a Sink completes at once.
	sinkGroup = 64
)

// sinker is a running Sink stage.
type sinker[In any] struct {
	s     *Stage
	ctx   context.Context
	pr    *Probe
	fn    func(context.Context, In) error
	group int      // values completed at once: 1, or sinkGroup while calls are fast
	done  []Ticket // values whose call returned nil, not completed yet
}

func (k *sinker[In]) chunk(chunk []Item[In]) error {
	start := time.Now()
	for i := range chunk {
		it := &chunk[i]
		if err := call(k.ctx, k.s, k.pr, it.Ticket, func() error { return k.fn(k.ctx, it.Value) }); err != nil {
			k.complete() // what returned before the failure completes, even if it stops Run
			if err := k.s.Fail(it.Ticket, err); err != nil {
				return err
			}
			continue
		}
		k.done = append(k.done, it.Ticket)
		if len(k.done) >= k.group {
			k.complete()
		}
	}
	k.complete()
	k.group = 1
	if time.Since(start) < time.Duration(len(chunk))*fastCall {
		k.group = sinkGroup
	}
	return nil
}

// complete completes the values whose call returned.
func (k *sinker[In]) complete() {
	if len(k.done) > 0 {
		k.s.Done(k.done...)
		k.done = k.done[:0]
	}
}
