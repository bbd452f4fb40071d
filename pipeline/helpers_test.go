package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/enginetest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// sourceFunc is a Source whose poll loop is the test's own script, to
// drive the Group step by step.
type sourceFunc = enginetest.SourceFunc

// parse fails with Invalid for values that are not numbers.
var parse = enginetest.ParseInt

// assignAndSend assigns t/0 to h and sends it n records, testkit.Values(n).
func assignAndSend(h *testkit.Harness, n int) {
	h.Assign("t", 0)
	h.Send("t", 0, testkit.Values(n)...)
}

// deadLettered runs build on t/0 with a dead-letter destination, sends n
// records, waits until all n are committed, and returns the offsets
// dead-lettered in the order they arrived ("[3 5]").
func deadLettered(t *testing.T, n int, build pipeline.Builder) string {
	t.Helper()
	dead := testkit.NewDeadLetters()
	h := testkit.New(t, build, dead.Option())
	assignAndSend(h, n)
	h.WaitCommitted("t", 0, int64(n))
	return deadOffsets(dead)
}

// checkCommitted checks t/0's committed offset; when says when, or why
// want is right.
func checkCommitted(t *testing.T, h *testkit.Harness, want int64, when string) {
	t.Helper()
	if got := h.Committed("t", 0); got != want {
		if when != "" {
			when = " " + when
		}
		t.Fatalf("committed %d%s, want %d", got, when, want)
	}
}

// deadOffsets lists the offsets of dead, in the order they arrived
// ("[3 5]").
func deadOffsets(dead *testkit.DeadLetters) string {
	var offs []int64
	for _, dl := range dead.Records() {
		offs = append(offs, dl.Record.Offset)
	}
	return fmt.Sprint(offs)
}

// eachHarness starts a Harness with opts whose graph is one Each stage
// calling do for every record.
func eachHarness(t *testing.T, do func(context.Context, sluice.Record) error, opts ...pipeline.Option) *testkit.Harness {
	t.Helper()
	return testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, do)
	}, opts...)
}

// lockedList is a list that goroutines (stages, hooks, loggers) add to
// while the test reads it.
type lockedList[T any] struct {
	mu    sync.Mutex
	items []T
}

func (l *lockedList[T]) push(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
}

// list returns a copy of the items, in the order they were pushed.
func (l *lockedList[T]) list() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// sink collects what reaches an End, per partition, in order.
type sink struct {
	mu  sync.Mutex
	got map[int32][]int64
}

func (s *sink) add(p int32, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = map[int32][]int64{}
	}
	s.got[p] = append(s.got[p], off)
}

// each ends p's graph with an Each stage that adds every value of in
// (an offset) to s under p's partition.
func (s *sink) each(p *pipeline.Partition, in pipeline.Stream[int64]) pipeline.End {
	return stages.Each(in, func(_ context.Context, o int64) error { s.add(p.Partition, o); return nil })
}

func (s *sink) of(p int32) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.got[p]...)
}

// gate blocks chosen offsets until released.
type gate struct {
	blocked map[int64]chan struct{}
}

func newGate(offsets ...int64) *gate {
	g := &gate{blocked: map[int64]chan struct{}{}}
	for _, o := range offsets {
		g.blocked[o] = make(chan struct{})
	}
	return g
}

func (g *gate) wait(ctx context.Context, off int64) error {
	if ch, ok := g.blocked[off]; ok {
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// waitRecord is wait for a record's offset: a function for an Each stage.
func (g *gate) waitRecord(ctx context.Context, r sluice.Record) error { return g.wait(ctx, r.Offset) }

func (g *gate) open(off int64) { close(g.blocked[off]) }

// attempts counts calls per offset and when they happened.
type attempts struct {
	mu    sync.Mutex
	calls map[int64][]time.Time
}

func (a *attempts) call(off int64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls == nil {
		a.calls = map[int64][]time.Time{}
	}
	a.calls[off] = append(a.calls[off], time.Now())
	return len(a.calls[off])
}

func (a *attempts) of(off int64) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[off]
}

// logLines records the log records of one level and above, with their
// attributes as text, for exact assertions.
type logLines struct {
	level slog.Level
	lockedList[logLine]
}

type logLine struct {
	msg   string
	attrs map[string]string
}

func (l *logLines) Enabled(_ context.Context, lv slog.Level) bool { return lv >= l.level }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *logLines) WithGroup(string) slog.Handler                 { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	line := logLine{msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		line.attrs[a.Key] = a.Value.String()
		return true
	})
	l.push(line)
	return nil
}

func (l *logLines) withMessage(prefix string) []logLine {
	var out []logLine
	for _, line := range l.list() {
		if strings.HasPrefix(line.msg, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// ignoringCtx is a stage function that blocks at offset stuck until
// release is closed, whatever its context says.
func ignoringCtx(stuck int64, release <-chan struct{}) func(context.Context, sluice.Record) error {
	return func(_ context.Context, r sluice.Record) error {
		if r.Offset == stuck {
			<-release
		}
		return nil
	}
}

// stopClean stops h and fails the test if Run returned an error.
func stopClean(t *testing.T, h *testkit.Harness) {
	t.Helper()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
}
