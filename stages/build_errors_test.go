package stages_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

type builder = func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End

func recordOffset(_ context.Context, r sluice.Record) (int64, error) { return r.Offset, nil }

// A bad argument to a stage constructor is a *sluice.BuildError naming
// the stage and the argument, never a panic in the user's builder.
func TestBadStageArgumentsFailTheBuildNamingTheStage(t *testing.T) {
	writeNothing := func(context.Context, []int64) error { return nil }
	cases := map[string]struct {
		build builder
		want  []string
	}{
		"Pool workers 0": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 0, recordOffset, stages.Name("enrich")))
		}, []string{`"enrich"`, "stages.Pool: workers is 0"}},
		"PoolByKey nil key": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.PoolByKey(in, 2, nil, recordOffset))
		}, []string{`"Pool#1"`, "stages.PoolByKey: key is nil"}},
		"Map nil fn": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map[sluice.Record, int](in, nil))
		}, []string{`"Map#1"`, "stages.Map: fn is nil"}},
		"FlatMap nil fn": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.FlatMap[sluice.Record, int](in, nil))
		}, []string{`"FlatMap#1"`, "stages.FlatMap: fn is nil"}},
		"Filter nil keep": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Filter(in, nil))
		}, []string{`"Filter#1"`, "stages.Filter: keep is nil"}},
		"Each nil fn": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, nil)
		}, []string{`"Each#1"`, "stages.Each: fn is nil"}},
		"Batch maxSize 0": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Batch(in, 0, time.Second))
		}, []string{`"Batch#1"`, "stages.Batch: maxSize is 0"}},
		"Batch negative maxWait": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Batch(in, 10, -time.Second))
		}, []string{`"Batch#1"`, "maxWait is -1s"}},
		"BatchByWeight nil weight": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.BatchByWeight(in, 10, time.Second, nil))
		}, []string{`"Batch#1"`, "stages.BatchByWeight: weight is nil"}},
		"Route n 0": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Route(in, 0, func(sluice.Record) int { return 0 })[0])
		}, []string{`"Route#1"`, "stages.Route: n is 0"}},
		"Route nil pick": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Route(in, 1, nil)[0])
		}, []string{`"Route#1"`, "stages.Route: pick is nil"}},
		"negative Buffer": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, recordOffset, stages.Buffer(-1)))
		}, []string{`"Map#1"`, "stages.Buffer(-1)"}},
		"NewSharedBatcher maxSize 0": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.NewSharedBatcher(writeNothing, 0, time.Second).Feed(stages.Map(in, recordOffset))
		}, []string{`"SharedBatch#2"`, "stages.NewSharedBatcher: maxSize is 0"}},
		"NewSharedBatcher maxWait 0": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.NewSharedBatcher(writeNothing, 10, 0).Feed(stages.Map(in, recordOffset))
		}, []string{`"SharedBatch#2"`, "maxWait is 0s"}},
		"NewSharedBatcher nil write": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.NewSharedBatcher[int64](nil, 10, time.Second).Feed(stages.Map(in, recordOffset))
		}, []string{`"SharedBatch#2"`, "write is nil"}},
		"NewSharedBatcherByWeight nil weight": {func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.NewSharedBatcherByWeight(writeNothing, 10, time.Second, nil).Feed(stages.Map(in, recordOffset))
		}, []string{`"SharedBatch#2"`, "weight is nil"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { expectBuildError(t, tc.build, tc.want...) })
	}
}
