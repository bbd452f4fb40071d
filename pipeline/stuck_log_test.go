package pipeline_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A stuck value's warning names the stage, the partition, the offset and
// how long, in a line of a few hundred bytes: every goroutine's stack
// (kilobytes) goes to a separate line at debug level, logged only when
// the logger enables debug.
func TestStuckWarningIsShortAndStacksAreDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logs := &logLines{level: level}
				release := make(chan struct{})
				h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
						<-release
						return nil
					}, stages.Name("slow"))
				}, pipeline.WithLogger(slog.New(logs)), pipeline.WithStuckThreshold(time.Second))
				h.Assign("t", 0)
				h.Send("t", 0, []byte("a"))
				time.Sleep(2 * time.Second)
				synctest.Wait()
				close(release)
				h.WaitCommitted("t", 0, 1)
				if err := h.Stop(); err != nil {
					t.Fatal(err)
				}
				warn := logs.withMessage(`sluice: value stuck in stage "slow"`)
				if len(warn) != 1 {
					t.Fatalf("stuck warnings %+v, want one", logs.lines)
				}
				size := 0
				for k, v := range warn[0].attrs {
					size += len(k) + len(v)
				}
				if _, ok := warn[0].attrs["goroutines"]; ok || size > 300 || warn[0].attrs["offset"] != "0" || warn[0].attrs["stuck_for"] == "" {
					t.Errorf("stuck warning attributes %v (%d bytes), want stage, partition, offset 0 and stuck_for, no stacks", warn[0].attrs, size)
				}
				stacks := logs.withMessage("sluice: goroutines when a value was found stuck")
				if want := map[bool]int{false: 0, true: 1}[level == slog.LevelDebug]; len(stacks) != want {
					t.Fatalf("%d debug lines with the stacks, want %d", len(stacks), want)
				}
				if level == slog.LevelDebug && len(stacks[0].attrs["goroutines"]) < 100 {
					t.Errorf("debug line without the stacks: %v", stacks[0].attrs)
				}
			})
		})
	}
}
