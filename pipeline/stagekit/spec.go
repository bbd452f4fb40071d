package stagekit

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/streams"
	"github.com/sluice-go/sluice/pipeline"
)

// StageSpec describes a stage being added to a graph.
type StageSpec struct {
	// Name identifies the stage in errors, logs and dead letters. Empty
	// means Kind followed by the stage's position in the graph ("Map#2").
	Name string
	// Kind is the stage's type, used for the default name ("Map") and in
	// the errors about Shared.
	Kind string
	// Buffer is the capacity, in chunks, of the stage's output channel(s);
	// 0 means the default (4).
	Buffer int
	// Retry overrides Run's retry policy for this stage (see
	// pipeline.WithRetry); zero fields take the defaults of
	// sluice.DefaultRetry, an invalid policy fails the build naming the
	// stage.
	Retry *sluice.RetryPolicy
	// Problem is what the stage's constructor found wrong with its
	// arguments (a nil function, a size below one), or nil. When set, the
	// Add call fails the build with a *sluice.BuildError naming the stage
	// and this error, and the stage never runs: a constructor checks its
	// arguments, puts the first problem here and still calls Add, so that
	// a misuse is a build error instead of a panic in the user's builder.
	Problem error
	// Shared is the declaration of the consumer-wide object (one for every
	// partition of a Run) the stage uses, or nil. See [Shared] for the
	// rules the Add call enforces.
	Shared *Shared
	// Uses lists the consumer-wide objects the stage uses that may serve
	// several stages of a graph and several Runs, such as a limit on
	// calls (stages.Limiter, stages.KeyLock). See [Use] for the one rule
	// the Add call enforces.
	Uses []Use
	// Holds is how many input values the stage may keep before it emits
	// anything (stages.Batch: its maxSize), or 0. The runtime feeds a new
	// graph at first only a few records at a time, more as they complete;
	// it feeds at least the largest Holds of the graph's stages, so that
	// such a stage fills its first output without waiting for a timer.
	Holds int
}

// Use is a consumer-wide object a stage uses (see StageSpec.Uses), such
// as stages.Limiter: unlike a [Shared] one, it may serve several stages
// of a graph and several pipeline.Runs. Adding the stage fails the build,
// with a *sluice.BuildError naming the stage and Kind, when another
// partition's graph of the same Run and topic uses a different object of
// the same Kind at the same stage position: the builder creates one per
// partition instead of once before Run, so what was meant to hold for the
// whole consumer holds for each partition alone.
type Use struct {
	// Kind names the object in errors ("Limiter").
	Kind string
	// Object is the object, compared by identity: a pointer.
	Object any
}

// Shared declares a consumer-wide object: one that serves every partition
// of one pipeline.Run, such as stages.SharedBatcher. The object holds a
// Shared (the zero value is ready) and every stage using it sets
// StageSpec.Shared to it. Adding such a stage fails the build, with a
// *sluice.BuildError naming the stage, when:
//
//   - the object already belongs to another Run (it belongs to the first
//     Run that used it: create one per Run);
//   - it is used twice in one partition's graph;
//   - another partition's graph of the same Run and topic has a different
//     object of the same Kind at the same stage position: the builder
//     creates one per partition instead of once before Run.
//
// Shared has no methods: the Add calls check it, safely from the builders
// of several partitions at once. It must not be copied after first use.
type Shared struct{ s engine.Shared }

func (sp StageSpec) engine() engine.StageSpec {
	return engine.StageSpec{Name: sp.Name, Kind: sp.Kind, Buffer: sp.Buffer, Retry: sp.Retry, Holds: sp.Holds}
}

// check fails the build when sp carries a problem or its Shared or Uses
// may not be used here; see StageSpec.Problem, Shared and Use.
func check[T any](in pipeline.Stream[T], sp StageSpec) {
	if sp.Problem != nil || sp.Shared != nil || len(sp.Uses) > 0 {
		var uses []engine.Use
		for _, u := range sp.Uses {
			uses = append(uses, engine.Use{Kind: u.Kind, Object: u.Object})
		}
		var sh *engine.Shared
		if sp.Shared != nil {
			sh = &sp.Shared.s
		}
		engine.CheckStage(streams.Engine(in), sp.engine(), sp.Problem, sh, uses)
	}
}
