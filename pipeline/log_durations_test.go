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
	mu    sync.Mutex
	found []string
	msgs  []string
}

func (d *durationAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (d *durationAttrs) WithAttrs([]slog.Attr) slog.Handler       { return d }
func (d *durationAttrs) WithGroup(string) slog.Handler            { return d }
func (d *durationAttrs) Handle(_ context.Context, r slog.Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.msgs = append(d.msgs, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindDuration {
			d.found = append(d.found, r.Message+": "+a.Key)
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
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				var err error
				failed.Do(func() { err = errors.New("once") }) // one retry: its delay is logged
				if err == nil && string(r.Value) == "hang" {
					<-ctx.Done() // the drain times out
				}
				return err
			})
		}, pipeline.WithLogger(slog.New(logs)), pipeline.WithDrainTimeout(time.Second))
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.WaitCommitted("t", 0, 1)
		h.Revoke("t", 0) // drained in time
		h.Send("t", 1, []byte("hang"))
		synctest.Wait()
		h.Revoke("t", 1) // drain timed out
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
		logs.mu.Lock()
		defer logs.mu.Unlock()
		if len(logs.found) != 0 {
			t.Errorf("durations logged as time.Duration: %v", logs.found)
		}
		for _, want := range []string{"sluice: partition drained", "sluice: partition drain timed out; committing only what finished"} {
			seen := false
			for _, m := range logs.msgs {
				seen = seen || strings.HasPrefix(m, want)
			}
			if !seen {
				t.Errorf("no %q line in %q", want, logs.msgs)
			}
		}
	})
}
