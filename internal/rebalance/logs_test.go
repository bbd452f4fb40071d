package rebalance

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// durationAttrs records the log attributes whose value is a
// time.Duration (slog's JSON handler prints those as bare nanoseconds)
// and the keys of every record's attributes.
type durationAttrs struct {
	mu    sync.Mutex
	found []string
	keys  map[string]bool
}

func (d *durationAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (d *durationAttrs) WithAttrs([]slog.Attr) slog.Handler       { return d }
func (d *durationAttrs) WithGroup(string) slog.Handler            { return d }
func (d *durationAttrs) Handle(_ context.Context, r slog.Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		d.keys[r.Message+"/"+a.Key] = true
		if a.Value.Kind() == slog.KindDuration {
			d.found = append(d.found, r.Message+": "+a.Key)
		}
		return true
	})
	return nil
}

// The durations the core logs (a commit's and the close's time) are text
// with their unit.
func TestLoggedDurationsAreText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &durationAttrs{keys: map[string]bool{}}
		h := startLogged(t, slog.New(logs))
		h.assign(tp0)
		h.commitOf(off(tp0, 5)).ok()
		time.Sleep(PollIdle) // the loop reads the outcome
		synctest.Wait()
		h.stopOK()
		logs.mu.Lock()
		defer logs.mu.Unlock()
		if len(logs.found) != 0 {
			t.Errorf("durations logged as time.Duration: %v", logs.found)
		}
		for _, k := range []string{"offsets committed/took", "client closed/took"} {
			if !logs.keys[k] {
				t.Errorf("no %q attribute logged", k)
			}
		}
	})
}
