package stagekit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// Words is a new kind of stage: it splits every line into its words. The
// kit runs the loop; a line's record commits once all its words completed,
// and a line with no words completes at once.
func Words(in pipeline.Stream[string], opts ...stages.CallOption) pipeline.Stream[string] {
	return stagekit.Transform(in, stages.Spec("Words", opts...),
		func(_ context.Context, line string, emit *stagekit.Emitter[string]) error {
			for _, w := range strings.Fields(line) {
				emit.Emit(w)
			}
			return nil
		})
}

func ExampleTransform() {
	testkit.RunExample("ExampleTransform", func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			lines := stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) { return string(r.Value), nil })
			return stages.Each(Words(lines), func(_ context.Context, w string) error {
				fmt.Println(w)
				return nil
			})
		})
		h.Send("lines", 0, []byte("hello kafka"), []byte(" "), []byte("bye"))
		h.Assign("lines", 0)
		h.WaitCommitted("lines", 0, 3)
		fmt.Println("Run:", h.Stop())
	})
	// Output:
	// hello
	// kafka
	// bye
	// Run: <nil>
}

// Quota is the consumer-wide object of a stage of your own: one budget of
// calls for every partition. Its stage declares it in StageSpec.Uses.
type Quota struct {
	mu   sync.Mutex
	left int
}

// Spend ends a graph, taking one unit of q for every value.
func Spend(in pipeline.Stream[string], q *Quota) pipeline.End {
	sp := stagekit.StageSpec{Kind: "Spend", Uses: []stagekit.Use{{Kind: "Quota", Object: q}}}
	return stagekit.Sink(in, sp, func(context.Context, string) error {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.left--
		return nil
	})
}

// A builder that creates the Quota makes one per partition: the second
// partition's build fails, naming the stage and the object.
func ExampleUse() {
	fake := testkit.NewFake()
	done := make(chan error)
	go func() {
		done <- pipeline.Run(context.Background(), fake, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			q := &Quota{left: 100} // wrong: create it once, before Run
			vals := stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) { return string(r.Value), nil })
			return Spend(vals, q)
		})
	}()
	_ = fake.Assign("calls", 0)
	_ = fake.Assign("calls", 1)
	fmt.Println(<-done)
	// Output:
	// sluice: building the graph of calls/1: stage "Spend#2": another partition's graph has a different Quota at this place: the builder creates one per partition; create it once, before pipeline.Run, and use it in every graph
}
