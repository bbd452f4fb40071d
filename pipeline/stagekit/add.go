package stagekit

import (
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/streams"
	"github.com/sluice-go/sluice/pipeline"
)

// AddStage adds a stage with one input and one output to in's graph, from
// inside a [pipeline.Builder]. run is started in its own goroutine once
// the builder returned; it must read in until Recv returns false and
// return nil, or return the error from [Stage.Fail]. Returning closes the
// output; what is left in the input is then discarded (not completed).
// A panic in run stops Run with a *sluice.PanicError. A zero or already
// consumed in, a call after the builder returned, a spec with a Problem
// or a misused Shared fails the build with a *sluice.BuildError naming
// the stage.
func AddStage[In, Out any](in pipeline.Stream[In], spec StageSpec, run func(s *Stage, in *Inlet[In], out *Outlet[Out]) error) pipeline.Stream[Out] {
	check(in, spec)
	return streams.Public(engine.AddStage(streams.Engine(in), spec.engine(),
		func(s *engine.Stage, in *engine.Inlet[In], out *engine.Outlet[Out]) error {
			h := &struct { // the stage's handles, in one allocation
				s   Stage
				in  Inlet[In]
				out Outlet[Out]
			}{Stage{s}, Inlet[In]{in}, Outlet[Out]{out}}
			return run(&h.s, &h.in, &h.out)
		}))
}

// AddFanOut adds a stage with one input and n outputs, like [AddStage];
// n below one fails the build.
func AddFanOut[In, Out any](in pipeline.Stream[In], spec StageSpec, n int, run func(s *Stage, in *Inlet[In], outs []*Outlet[Out]) error) []pipeline.Stream[Out] {
	check(in, spec)
	es := engine.AddFanOut(streams.Engine(in), spec.engine(), n,
		func(s *engine.Stage, in *engine.Inlet[In], eouts []*engine.Outlet[Out]) error {
			outs := make([]*Outlet[Out], len(eouts))
			for i, o := range eouts {
				outs[i] = &Outlet[Out]{o}
			}
			return run(&Stage{s}, &Inlet[In]{in}, outs)
		})
	outs := make([]pipeline.Stream[Out], len(es))
	for i, s := range es {
		outs[i] = streams.Public(s)
	}
	return outs
}

// AddEnd adds a terminal stage, like [AddStage] without output. Every
// value it receives must end there: complete its ticket ([Stage.Done]) or
// fail it ([Stage.Fail]).
func AddEnd[In any](in pipeline.Stream[In], spec StageSpec, run func(s *Stage, in *Inlet[In]) error) pipeline.End {
	check(in, spec)
	return streams.End(engine.AddEnd(streams.Engine(in), spec.engine(),
		func(s *engine.Stage, in *engine.Inlet[In]) error {
			h := &struct { // the stage's handles, in one allocation
				s  Stage
				in Inlet[In]
			}{Stage{s}, Inlet[In]{in}}
			return run(&h.s, &h.in)
		}))
}
