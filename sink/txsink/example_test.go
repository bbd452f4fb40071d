package txsink_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// Exactly once across a restart: the Writer stores each partition's
// position with its rows and is the source's offset store, so a second
// consumer resumes where the store says, even though the group's
// committed offset was lost, and writes each row once. MemStore stands in
// for a database here (package sink/postgres is one).
func Example_exactlyOnce() {
	store := txsinktest.NewMemStore[int]()

	// consume runs one consumer of the group "g" over the log of
	// events[0] until it committed the whole log, with the group's
	// committed offset set to groupCommit first (-1: none), and returns
	// how many records it was delivered.
	consume := func(log []string, groupCommit int64) int {
		w := txsink.New[int](store, txsink.Options[int]{ExactlyOnce: true, Linger: time.Millisecond})
		src := testkit.NewFake()
		src.UseOffsetStore(w, "g") // as source.Config.OffsetStore = w
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return w.Write(stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) {
				return strconv.Atoi(string(r.Value))
			}))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- pipeline.Run(ctx, src, build) }()

		for _, v := range log {
			_ = src.Send("events", 0, []byte(v))
		}
		if groupCommit >= 0 {
			_ = src.SetCommitted("events", 0, groupCommit)
		}
		_ = src.Assign("events", 0)
		for {
			changed := src.Changed()
			if src.Committed("events", 0) == int64(len(log)) {
				break
			}
			<-changed
		}
		delivered := src.Delivered("events", 0)
		cancel()
		if err := <-done; err != nil {
			fmt.Println("Run:", err)
		}
		return delivered
	}

	consume([]string{"0", "1", "2", "3", "4"}, -1)
	fmt.Println("first consumer wrote:", store.Rows())
	n := consume([]string{"0", "1", "2", "3", "4", "5", "6", "7"}, 0) // the group's commit was lost
	fmt.Println("second consumer was delivered", n, "records")
	fmt.Println("rows:", store.Rows())
	// Output:
	// first consumer wrote: [0 1 2 3 4]
	// second consumer was delivered 3 records
	// rows: [0 1 2 3 4 5 6 7]
}
