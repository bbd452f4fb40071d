package produce_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// A stage without a client, a topic or toMsg fails the graph's build with
// a *sluice.BuildError naming the backend's function and what is
// missing (its Problem names the stage too).
func TestStageBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nilC  bool
		topic string
		toMsg func(sluice.Record) (sluice.Message, error)
		want  string
	}{
		{"nil producer", true, "out", recordMessage, "stub.Produce: the producer is nil"},
		{"empty topic", false, "", recordMessage, "stub.Produce: the topic is empty"},
		{"nil toMsg", false, "out", nil, "stub.Produce: toMsg is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := produce.NewTracker(names)
				var p produce.Backend = newProducer(newStub(tr, false), tr)
				if tc.nilC {
					p = nil
				}
				build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return produce.Stage(in, "stub.Produce", p, tc.topic, tc.toMsg, nil)
				}
				f := testkit.NewFake()
				r := testkit.Start(t, f, build, quiet)
				if err := f.Assign("in", 0); err == nil {
					t.Error("Assign returned nil, want the build error")
				}
				err := r.Wait(t)
				var be *sluice.BuildError
				if !errors.As(err, &be) {
					t.Fatalf("Run returned %v, want a *sluice.BuildError", err)
				}
				if be.Topic != "in" || be.Partition != 0 || be.Problem != `stage "Produce#1": `+tc.want {
					t.Errorf("BuildError on %s/%d: %q, want on in/0: %q", be.Topic, be.Partition, be.Problem, `stage "Produce#1": `+tc.want)
				}
			})
		})
	}
}

// ptrProducer is a backend's Producer as backends declare it: a struct
// behind a pointer, the core embedded.
type ptrProducer struct{ *produce.Core }

// A nil *Producer in the interface is refused as nil (never dereferenced),
// and a zero Producer (its embedded core nil: not made by its
// constructor) is refused as such.
func TestStageRefusesANilPointerAndAZeroProducer(t *testing.T) {
	for name, tc := range map[string]struct {
		p    produce.Backend
		want string
	}{
		"nil pointer": {(*ptrProducer)(nil), "stub.Produce: the producer is nil"},
		"zero value":  {&ptrProducer{}, "stub.Produce: the producer (*produce_test.ptrProducer) was not made by its constructor"},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return produce.Stage(in, "stub.Produce", tc.p, "out", recordMessage, nil)
				}
				f := testkit.NewFake()
				r := testkit.Start(t, f, build, quiet)
				if err := f.Assign("in", 0); err == nil {
					t.Error("Assign returned nil, want the build error")
				}
				var be *sluice.BuildError
				if err := r.Wait(t); !errors.As(err, &be) || be.Problem != `stage "Produce#1": `+tc.want {
					t.Fatalf("Run returned %v, want a *sluice.BuildError with the problem %q", err, `stage "Produce#1": `+tc.want)
				}
			})
		})
	}
}
