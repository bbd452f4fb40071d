package stages_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit/stagetest"
	"github.com/sluice-go/sluice/stages"
)

// The conformance suite of pipeline/stagekit/stagetest, run on every
// shipped stage. Inputs are the ints 0..11 (the suite's i-th input is i);
// an output carries the inputs it holds, so Origin reads them back.

var errBad = errors.New("bad input")

// Every third input (2, 5, 8, 11) is invalid for the stages that call a
// function of their user; every fourth (0, 4, 8) is filtered by Filter.
func bad(i int) bool     { return i%3 == 2 }
func dropped(i int) bool { return i%4 == 0 }

func ident(i int) int     { return i }
func one(i int) []int     { return []int{i} }
func slice(b []int) []int { return b }
func strOrigin(s string) []int {
	i, err := strconv.Atoi(s)
	if err != nil {
		return []int{-1}
	}
	return []int{i}
}

// mapFn is the function of Map, Pool and PoolByKey: invalid for bad
// inputs, the input's decimal text otherwise.
func mapFn(_ context.Context, i int) (string, error) {
	if bad(i) {
		return "", sluice.Invalid(errBad)
	}
	return strconv.Itoa(i), nil
}

// conform runs the suite on each stage, in a subtest named for the
// stage.
func conform[In, Out any](t *testing.T, ss ...stagetest.Stage[In, Out]) {
	t.Helper()
	for _, s := range ss {
		t.Run(s.Name, func(t *testing.T) { stagetest.Run(t, s) })
	}
}

// The stages that call a function of their user: Map, Pool and PoolByKey
// call mapFn; FlatMap and Each a function of their own.
func TestConformanceOfCallingStages(t *testing.T) {
	conform(t, []stagetest.Stage[int, string]{
		{
			Name:    "Map",
			Build:   func(in pipeline.Stream[int]) pipeline.Stream[string] { return stages.Map(in, mapFn) },
			Input:   ident,
			Origin:  strOrigin,
			Invalid: bad,
		},
		{
			Name:    "Pool",
			Build:   func(in pipeline.Stream[int]) pipeline.Stream[string] { return stages.Pool(in, 3, mapFn) },
			Input:   ident,
			Origin:  strOrigin,
			Invalid: bad,
		},
		{
			Name: "PoolByKey",
			Build: func(in pipeline.Stream[int]) pipeline.Stream[string] {
				return stages.PoolByKey(in, 3, func(i int) string { return strconv.Itoa(i % 4) }, mapFn)
			},
			Input:   ident,
			Origin:  strOrigin,
			Invalid: bad,
		},
	}...)
	conform(t, []stagetest.Stage[int, int]{
		// FlatMap yields i%3 copies of i (none for 0, 3, ...), and fails bad
		// inputs as invalid.
		{
			Name: "FlatMap",
			Build: func(in pipeline.Stream[int]) pipeline.Stream[int] {
				return stages.FlatMap(in, func(_ context.Context, i int) ([]int, error) {
					if bad(i) {
						return nil, sluice.Invalid(errBad)
					}
					return slices.Repeat([]int{i}, i%3), nil
				})
			},
			Input:   ident,
			Origin:  one,
			Fanout:  func(i int) int { return i % 3 },
			Invalid: bad,
		},
	}...)
	conform(t, []stagetest.Stage[int, struct{}]{
		{
			Name: "Each",
			End: func(in pipeline.Stream[int]) pipeline.End {
				return stages.Each(in, func(_ context.Context, i int) error {
					if bad(i) {
						return sluice.Invalid(errBad)
					}
					return nil
				})
			},
			Input:   ident,
			Invalid: bad,
		},
	}...)
}

// The stages that group or split values: Batch, BatchByWeight, Unbatch
// (alone and after Batch) and a SharedBatcher's Feed.
func TestConformanceOfBatchingStages(t *testing.T) {
	conform(t, []stagetest.Stage[int, []int]{
		{
			Name: "Batch",
			Build: func(in pipeline.Stream[int]) pipeline.Stream[[]int] {
				return stages.Batch(in, 5, time.Second)
			},
			Input:  ident,
			Origin: slice,
		},
		{
			Name: "BatchByWeight",
			Build: func(in pipeline.Stream[int]) pipeline.Stream[[]int] {
				return stages.BatchByWeight(in, 10, time.Second, func(i int) int { return 1 + i%4 })
			},
			Input:  ident,
			Origin: slice,
		},
	}...)
	conform(t, []stagetest.Stage[[]int, int]{
		// Unbatch splits input i, a slice of i%3 copies of i, into its elements.
		{
			Name:   "Unbatch",
			Build:  func(in pipeline.Stream[[]int]) pipeline.Stream[int] { return stages.Unbatch(in) },
			Input:  func(i int) []int { return slices.Repeat([]int{i}, i%3) },
			Origin: one,
			Fanout: func(v []int) int { return len(v) },
		},
	}...)
	conform(t, []stagetest.Stage[int, int]{
		// Batch then Unbatch: Unbatch hands each element on with the ticket of the
		// value it came from.
		{
			Name: "Batch+Unbatch",
			Build: func(in pipeline.Stream[int]) pipeline.Stream[int] {
				return stages.Unbatch(stages.Batch(in, 5, time.Second))
			},
			Input:  ident,
			Origin: one,
		},
	}...)
	var b *stages.SharedBatcher[int]
	conform(t, []stagetest.Stage[int, struct{}]{
		// SharedBatcher's Feed, with one batcher per Run, created before it.
		{
			Name: "SharedBatcher.Feed",
			BeforeRun: func() {
				b = stages.NewSharedBatcher(func(_ context.Context, batch []int) error { return nil }, 5, time.Second)
			},
			End:   func(in pipeline.Stream[int]) pipeline.End { return b.Feed(in) },
			Input: ident,
		},
	}...)
}

// The stages that drop, route or copy values: Filter, Route, Tee and
// Discard.
func TestConformanceOfFilteringAndRoutingStages(t *testing.T) {
	conform(t, []stagetest.Stage[int, int]{
		{
			Name: "Filter",
			Build: func(in pipeline.Stream[int]) pipeline.Stream[int] {
				return stages.Filter(in, func(i int) bool { return !dropped(i) })
			},
			Input:   ident,
			Origin:  one,
			Filters: dropped,
		},
		// Route sends input i to output i%3; the suite checks every output.
		{
			Name: "Route",
			Fan: func(in pipeline.Stream[int]) []pipeline.Stream[int] {
				return stages.Route(in, 3, func(i int) int { return i % 3 })
			},
			Input:  ident,
			Origin: one,
		},
		{
			Name:   "Tee",
			Fan:    func(in pipeline.Stream[int]) []pipeline.Stream[int] { return stages.Tee(in, 3) },
			Input:  ident,
			Origin: one,
			Fanout: func(int) int { return 3 },
		},
	}...)
	conform(t, []stagetest.Stage[int, struct{}]{
		{
			Name:  "Discard",
			End:   func(in pipeline.Stream[int]) pipeline.End { return stages.Discard(in) },
			Input: ident,
		},
	}...)
}
