package pipeline_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// Without WithLogger, Run logs to slog.Default(): a consumer that sets no
// logger still shows its retry warnings (here: a decoder that forgets
// sluice.Invalid). It reads slog.Default when Run starts.
func TestRunLogsToSlogDefaultWithoutWithLogger(t *testing.T) {
	logs := &logLines{level: slog.LevelWarn}
	prev := slog.Default()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() { slog.SetDefault(prev) })
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(context.Context, sluice.Record) error { return errors.New("bad json") },
				stages.Name("default-logger-decode"))
		}, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("x"))
		if err := h.Wait(); err == nil {
			t.Fatal("Run returned nil, want the exhausted retries")
		}
	})
	n := 0
	for _, l := range logs.withMessage("sluice: call failed, retrying") {
		if l.attrs["stage"] == "default-logger-decode" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d retry warnings on slog.Default, want 1", n)
	}
}
