package rebalance

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// logRecorder is a slog.Handler that keeps what the core logs: each
// record's level and message, the keys of its attributes, and those whose
// value is a time.Duration (slog's JSON handler prints those as bare
// nanoseconds).
type logRecorder struct {
	mu        sync.Mutex
	records   []string        // "LEVEL message"
	keys      map[string]bool // "message/key"
	durations []string        // "message: key"
}

func newLogRecorder() *logRecorder { return &logRecorder{keys: map[string]bool{}} }

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Level.String()+" "+r.Message)
	r.Attrs(func(a slog.Attr) bool {
		l.keys[r.Message+"/"+a.Key] = true
		if a.Value.Kind() == slog.KindDuration {
			l.durations = append(l.durations, r.Message+": "+a.Key)
		}
		return true
	})
	return nil
}

// all returns the records so far, each "LEVEL message".
func (l *logRecorder) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// logged reports whether a record of level with message msg was logged.
func (l *logRecorder) logged(level slog.Level, msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.records, level.String()+" "+msg)
}

// The durations the core logs (a commit's and the close's time) are text
// with their unit.
func TestLoggedDurationsAreText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := newLogRecorder()
		h := startLogged(t, slog.New(logs))
		h.assign(tp0)
		h.commitOf(off(tp0, 5)).ok()
		time.Sleep(PollIdle) // the loop reads the outcome
		synctest.Wait()
		h.stopOK()
		logs.mu.Lock()
		defer logs.mu.Unlock()
		if len(logs.durations) != 0 {
			t.Errorf("durations logged as time.Duration: %v", logs.durations)
		}
		for _, k := range []string{"offsets committed/took", "client closed/took"} {
			if !logs.keys[k] {
				t.Errorf("no %q attribute logged", k)
			}
		}
	})
}
