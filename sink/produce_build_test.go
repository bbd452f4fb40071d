package sink_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
)

// A nil producer, an empty topic or a nil toMsg fails the build with a
// *pipeline.BuildError naming the stage, instead of a panic in the builder.
func TestProduceWithBadArgumentsFailsTheBuild(t *testing.T) {
	toMsg := func(r pipeline.Record) (sink.Message, error) { return sink.Message{Value: r.Value}, nil }
	// A producer that is never used: the build fails before the stage runs.
	p := &sink.Producer{}
	cases := map[string]struct {
		build func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End
		want  string
	}{
		"nil producer": {func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return sink.Produce(in, nil, "out", toMsg)
		}, "the producer is nil"},
		"empty topic": {func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return sink.Produce(in, p, "", toMsg)
		}, "the topic is empty"},
		"nil toMsg": {func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return sink.Produce[pipeline.Record](in, p, "out", nil)
		}, "toMsg is nil"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := testkit.New(t, tc.build)
				if err := h.Fake().Assign("t", 0); err == nil {
					t.Fatal("Assign succeeded; want the build to fail")
				}
				err := h.Wait()
				var be *pipeline.BuildError
				if !errors.As(err, &be) || !strings.Contains(err.Error(), `"Produce#1"`) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Run returned %v, want a BuildError naming Produce#1 and %q", err, tc.want)
				}
			})
		})
	}
}
