package pipeline_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// durationAttrs records every log attribute whose value is a
// time.Duration: slog's JSON handler writes those as bare nanoseconds
// ("drain":92999).
type durationAttrs struct {
	found, msgs lockedList[string]
}

func (d *durationAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (d *durationAttrs) WithAttrs([]slog.Attr) slog.Handler       { return d }
func (d *durationAttrs) WithGroup(string) slog.Handler            { return d }
func (d *durationAttrs) Handle(_ context.Context, r slog.Record) error {
	d.msgs.push(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindDuration {
			d.found.push(r.Message + ": " + a.Key)
		}
		return true
	})
	return nil
}

// The runtime logs durations (a drain's time, the drain timeout, a
// retry's delay) as text with their unit ("92.999µs"), never as a
// time.Duration, which JSON handlers print as a bare number of
// nanoseconds.
func TestLoggedDurationsCarryTheirUnit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &durationAttrs{}
		var failed sync.Once
		h := eachHarness(t, func(ctx context.Context, r sluice.Record) error {
			var err error
			failed.Do(func() { err = errors.New("once") }) // one retry: its delay is logged
			if err == nil && string(r.Value) == "hang" {
				<-ctx.Done() // the drain times out
			}
			return err
		}, pipeline.WithLogger(slog.New(logs)), pipeline.WithDrainTimeout(time.Second))
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.WaitCommitted("t", 0, 1)
		h.Revoke("t", 0) // drained in time
		h.Send("t", 1, []byte("hang"))
		synctest.Wait()
		h.Revoke("t", 1) // drain timed out
		stopClean(t, h)
		if found := logs.found.list(); len(found) != 0 {
			t.Errorf("durations logged as time.Duration: %v", found)
		}
		msgs := logs.msgs.list()
		for _, want := range []string{"sluice: partition drained", "sluice: partition drain timed out; committing only what finished"} {
			seen := false
			for _, m := range msgs {
				seen = seen || strings.HasPrefix(m, want)
			}
			if !seen {
				t.Errorf("no %q line in %q", want, msgs)
			}
		}
	})
}

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
				stopClean(t, h)
				warn := logs.withMessage(`sluice: value stuck in stage "slow"`)
				if len(warn) != 1 {
					t.Fatalf("stuck warnings %+v, want one", logs.list())
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
