package stages_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
)

// A zero Stream handed to a stage (a builder's variable never assigned)
// and a zero End returned or joined fail the build with a
// *sluice.BuildError, never a panic.
func TestZeroStreamFailsTheBuild(t *testing.T) {
	var zero pipeline.Stream[sluice.Record]
	var zeroInts pipeline.Stream[[]sluice.Record]
	writeNothing := func(context.Context, []sluice.Record) error { return nil }
	cases := map[string]builder{
		"Map": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(zero, recordOffset))
		},
		"Pool": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(zero, 2, recordOffset))
		},
		"PoolByKey": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.PoolByKey(zero, 2, func(sluice.Record) string { return "" }, recordOffset))
		},
		"Filter": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Filter(zero, func(sluice.Record) bool { return true }))
		},
		"FlatMap": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.FlatMap(zero, func(context.Context, sluice.Record) ([]int, error) { return nil, nil }))
		},
		"Each": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(zero, func(context.Context, sluice.Record) error { return nil })
		},
		"Discard": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(zero)
		},
		"Batch": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Batch(zero, 2, time.Second))
		},
		"Unbatch": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Unbatch(zeroInts))
		},
		"Tee": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			outs := stages.Tee(zero, 2)
			return pipeline.All(stages.Discard(outs[0]), stages.Discard(outs[1]))
		},
		"Route": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			outs := stages.Route(zero, 2, func(sluice.Record) int { return 0 })
			return pipeline.All(stages.Discard(outs[0]), stages.Discard(outs[1]))
		},
		"SharedBatcher": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.NewSharedBatcher(writeNothing, 2, time.Second).Feed(zero)
		},
		"stagekit.Transform": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stagekit.Transform(zero, stagekit.StageSpec{Name: "t"},
				func(context.Context, sluice.Record, *stagekit.Emitter[int]) error { return nil }))
		},
		"stagekit.Sink": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stagekit.Sink(zero, stagekit.StageSpec{Name: "s"}, func(context.Context, sluice.Record) error { return nil })
		},
		"stagekit.Mark": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			stagekit.Mark(zero, 1)
			_ = stagekit.Marked(zero)
			return stages.Discard(zero)
		},
		"zero End": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return pipeline.End{}
		},
		"All with a zero End": func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return pipeline.All(stages.Discard(in), pipeline.End{})
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) { expectBuildError(t, build) })
	}
}
