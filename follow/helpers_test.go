package follow_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

const interval = 100 * time.Millisecond

func tp(topic string, p int32) sluice.TopicPartition {
	return sluice.TopicPartition{Topic: topic, Partition: p}
}

// stubLeaders is a Leaders whose offsets and failures the test sets.
type stubLeaders struct {
	mu    sync.Mutex
	off   map[sluice.TopicPartition]int64
	err   error
	calls int
	asked [][]sluice.TopicPartition
}

func newStubLeaders() *stubLeaders {
	return &stubLeaders{off: map[sluice.TopicPartition]int64{}}
}

func (l *stubLeaders) set(topic string, p int32, next int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.off[tp(topic, p)] = next
}

func (l *stubLeaders) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
}

// get returns what the leaders have committed now, -1 when nothing.
func (l *stubLeaders) get(t sluice.TopicPartition) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.off[t]; ok {
		return v
	}
	return -1
}

func (l *stubLeaders) Committed(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	l.asked = append(l.asked, slices.Clone(tps))
	if l.err != nil {
		return nil, l.err
	}
	out := map[sluice.TopicPartition]int64{}
	for _, t := range tps {
		if v, ok := l.off[t]; ok {
			out[t] = v
		}
	}
	return out, nil
}

// recorder is a graph that records the offsets it processes and checks
// each against what the leaders had committed at that moment.
type recorder struct {
	leaders *stubLeaders
	gate    chan struct{} // when non-nil, each record waits for a receive

	mu       sync.Mutex
	got      map[sluice.TopicPartition][]int64
	breaches []string
}

func newRecorder(l *stubLeaders) *recorder {
	return &recorder{leaders: l, got: map[sluice.TopicPartition][]int64{}}
}

func (r *recorder) build(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Each(in, func(ctx context.Context, rec sluice.Record) error {
		t := tp(rec.Topic, rec.Partition)
		if lead := r.leaders.get(t); rec.Offset >= lead {
			r.mu.Lock()
			r.breaches = append(r.breaches, fmt.Sprintf("%s/%d@%d processed with the leaders at %d", rec.Topic, rec.Partition, rec.Offset, lead))
			r.mu.Unlock()
		}
		if r.gate != nil {
			select {
			case <-r.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		r.mu.Lock()
		r.got[t] = append(r.got[t], rec.Offset)
		r.mu.Unlock()
		return nil
	})
}

func (r *recorder) offsets(t sluice.TopicPartition) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[t])
}

func (r *recorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.breaches {
		t.Error(b)
	}
}

// span returns [from, to).
func span(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func values(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "v%d", i)
	}
	return out
}

// statuses records what a follow.Hook is told.
type statuses struct {
	mu  sync.Mutex
	all []follow.Status
}

func (s *statuses) OnFollowerStatus(st follow.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, st)
}

func (s *statuses) list() []follow.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all)
}

// last returns the newest status of each partition.
func (s *statuses) last() map[sluice.TopicPartition]follow.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[sluice.TopicPartition]follow.Status{}
	for _, st := range s.all {
		out[st.TopicPartition] = st
	}
	return maps.Clone(out)
}

// newFollower wraps fake with leaders, failing the test on error.
func newFollower(t *testing.T, fake sluice.Source, l follow.Leaders, opts ...follow.Option) *follow.Source {
	t.Helper()
	src, err := follow.New(fake, l, append([]follow.Option{follow.WithInterval(interval)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// settle lets the poller read the leaders (one interval) and everything
// triggered by it run.
func settle() {
	time.Sleep(interval)
	synctest.Wait()
}

// sendAndAssign sends the n values of values(n) to each of partitions of
// "orders", then assigns them.
func sendAndAssign(t *testing.T, fake *testkit.Fake, n int, partitions ...int32) {
	t.Helper()
	for _, p := range partitions {
		if err := fake.Send("orders", p, values(n)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := fake.Assign("orders", partitions...); err != nil {
		t.Fatal(err)
	}
}

// logRecorder is a slog.Handler keeping the level of each record.
type logRecorder struct {
	mu  sync.Mutex
	lvl []slog.Level
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lvl = append(l.lvl, r.Level)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) levels() []slog.Level {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lvl)
}

// rig is a follower of "orders" over a fake source, with stub leaders, a
// recorder of what the graph processed and a status hook.
type rig struct {
	fake    *testkit.Fake
	leaders *stubLeaders
	rec     *recorder
	hooks   *statuses
	run     *testkit.Running
}

// newRig returns a rig not started, its leaders at lead (partition of
// "orders" to the next offset they committed).
func newRig(lead map[int32]int64) *rig {
	leaders := newStubLeaders()
	for p, next := range lead {
		leaders.set("orders", p, next)
	}
	return &rig{fake: testkit.NewFake(), leaders: leaders, rec: newRecorder(leaders), hooks: &statuses{}}
}

// startRig starts a rig with its leaders at lead; opts go to the runtime.
func startRig(t *testing.T, lead map[int32]int64, opts ...pipeline.Option) *rig {
	t.Helper()
	r := newRig(lead)
	r.start(t, opts...)
	return r
}

// startWithRecords starts a rig with the leaders' offsets lead, sends the
// n values of values(n) to each of partitions of "orders", assigns them,
// and lets the follower settle.
func startWithRecords(t *testing.T, lead map[int32]int64, n int, partitions ...int32) *rig {
	t.Helper()
	r := startRig(t, lead)
	sendAndAssign(t, r.fake, n, partitions...)
	settle()
	return r
}

// start runs the follower with the rig's hook; opts go to the runtime.
func (r *rig) start(t *testing.T, opts ...pipeline.Option) {
	t.Helper()
	r.run = testkit.Start(t, newFollower(t, r.fake, r.leaders, follow.WithHook(r.hooks)), r.rec.build, opts...)
}

// wantProcessed fails the test unless partition p of "orders" processed
// exactly want, in order.
func (r *rig) wantProcessed(t *testing.T, step string, p int32, want []int64) {
	t.Helper()
	if got := r.rec.offsets(tp("orders", p)); !slices.Equal(got, want) {
		t.Fatalf("%s: partition %d processed %v, want %v", step, p, got, want)
	}
}

// wantCommitted fails the test unless partition p of "orders" committed
// want (-1: nothing).
func (r *rig) wantCommitted(t *testing.T, step string, p int32, want int64) {
	t.Helper()
	if got := r.fake.Committed("orders", p); got != want {
		t.Fatalf("%s: partition %d committed %d, want %d", step, p, got, want)
	}
}

// stop stops the run, failing the test if it returned an error or if a
// record was processed at or past the leaders' offset.
func (r *rig) stop(t *testing.T) {
	t.Helper()
	if err := r.run.Stop(t); err != nil {
		t.Fatal(err)
	}
	r.rec.check(t)
}
