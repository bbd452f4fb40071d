package stagekit_test

import (
	"context"
	"fmt"
	"strings"

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
	fake := testkit.NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- pipeline.Run(ctx, fake, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			lines := stages.Map(in, func(_ context.Context, r pipeline.Record) (string, error) { return string(r.Value), nil })
			return stages.Each(Words(lines), func(_ context.Context, w string) error {
				fmt.Println(w)
				return nil
			})
		})
	}()
	_ = fake.Send("lines", 0, []byte("hello kafka"), []byte(" "), []byte("bye"))
	_ = fake.Assign("lines", 0)
	for fake.Committed("lines", 0) < 3 {
		<-fake.Changed()
	}
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// hello
	// kafka
	// bye
	// Run: <nil>
}
