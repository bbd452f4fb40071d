package rebalance

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

type TP = sluice.TopicPartition

var (
	tp0 = TP{Topic: "in", Partition: 0}
	tp1 = TP{Topic: "in", Partition: 1}
)

func off(tp TP, next int64) sluice.Offset { return sluice.Offset{TopicPartition: tp, Next: next} }

// errRebalancing, errMovedOn and errNotMember stand for the client's
// REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID; the
// first two are retriable, as the backends have them.
var (
	errRebalancing = errors.New("REBALANCE_IN_PROGRESS")
	errMovedOn     = errors.New("ILLEGAL_GENERATION")
	errNotMember   = errors.New("UNKNOWN_MEMBER_ID")
)

// commitCall is one Backend.Commit the core made; the test answers it.
type commitCall struct {
	offs   []sluice.Offset
	answer chan commitAnswer
}

type commitAnswer struct {
	rejected []Rejected
	err      error
}

// fakeBackend is a Backend whose client is the test: Poll runs the
// actions queued with do (as rebalance callbacks would run), then waits
// for its timeout; every Commit is sent to commits and waits for the
// test's answer.
type fakeBackend struct {
	core    *Core
	actions chan func()
	commits chan *commitCall
	fatal   error
	// beforeFinal, waitToRetry and gaveUpPaused, when set, run inside
	// BeforeFinalCommit, WaitToRetryCommit and GaveUpPaused.
	beforeFinal  func()
	waitToRetry  func()
	gaveUpPaused func([]TP)

	mu     sync.Mutex
	events []string // Pause, Resume, Leave, Close, WaitToRetryCommit, in order
}

func (b *fakeBackend) Poll(ctx context.Context, timeout time.Duration) error {
	for {
		select {
		case f := <-b.actions:
			f()
			continue
		default:
		}
		break
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case f := <-b.actions:
		f()
	}
	return b.fatal
}

func (b *fakeBackend) Fail(err error) error {
	b.core.LoseAll()
	return errors.Join(err, b.core.LeaveAndClose(time.Now()))
}

func (b *fakeBackend) Interval() {}

func (b *fakeBackend) Commit(offs []sluice.Offset) ([]Rejected, error) {
	c := &commitCall{offs: offs, answer: make(chan commitAnswer, 1)}
	b.commits <- c
	a := <-c.answer
	return a.rejected, a.err
}

func (b *fakeBackend) ExpectedCommitError(err error) bool {
	return errors.Is(err, errRebalancing) || errors.Is(err, errMovedOn) || errors.Is(err, errNotMember)
}

func (b *fakeBackend) RetriableCommitError(err error) bool {
	return errors.Is(err, errRebalancing) || errors.Is(err, errMovedOn)
}

func (b *fakeBackend) BeforeFinalCommit(time.Time) {
	if b.beforeFinal != nil {
		b.beforeFinal()
	}
}

func (b *fakeBackend) WaitToRetryCommit(d time.Duration) {
	b.event("retry")
	time.Sleep(d) // the fake client's rebalance completes meanwhile (fake time)
	if b.waitToRetry != nil {
		b.waitToRetry()
	}
}

func (b *fakeBackend) Pause(TP) error        { b.event("pause"); return nil }
func (b *fakeBackend) Resume([]TP) error     { b.event("resume"); return nil }
func (b *fakeBackend) Leave(time.Time) error { b.event("leave"); return nil }
func (b *fakeBackend) GaveUpPaused(tps []TP) {
	b.event("gaveUpPaused")
	if b.gaveUpPaused != nil {
		b.gaveUpPaused(tps)
	}
}

func (b *fakeBackend) Close(deadline time.Time) error {
	b.event("close")
	_, err := b.core.CloseClient(deadline, func() error { return nil })
	return err
}

func (b *fakeBackend) event(e string) {
	b.mu.Lock()
	b.events = append(b.events, e)
	b.mu.Unlock()
}

// fakeGroup is the sluice.Group the core feeds. Offsets returns what
// the test set with report, once.
type fakeGroup struct {
	mu        sync.Mutex
	offsets   []sluice.Offset
	revoke    []sluice.Offset // what Revoke returns
	shutdown  []sluice.Offset // what Shutdown returns
	committed []committed
	assigned  [][]TP // the partitions of each Assign call
	revoked   [][]TP // the partitions of each Revoke call
	lost      [][]TP
	delivered map[TP]int
	pauseNext bool // Deliver asks for a pause
	// pauseAt: Deliver asks for a pause once this many records of a
	// partition were delivered (0: never).
	pauseAt int
	// maxRecords, maxBytes: the in-flight limits (0: the defaults).
	maxRecords int
	maxBytes   int64
	// offsets of the records delivered, per partition, and the sizes of
	// the deliveries, when logging (Deliver allocates then).
	logging   bool
	got       map[TP][]int64
	sizes     []int
	wake      chan struct{}
	resumable []TP
}

type committed struct {
	offs []sluice.Offset
	err  error
}

func newFakeGroup() *fakeGroup {
	return &fakeGroup{delivered: map[TP]int{}, wake: make(chan struct{}, 1)}
}

func (g *fakeGroup) report(offs ...sluice.Offset) {
	g.mu.Lock()
	g.offsets = append(g.offsets, offs...)
	g.mu.Unlock()
}

func (g *fakeGroup) commitsSeen() []committed {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]committed(nil), g.committed...)
}

func (g *fakeGroup) Assign(tps []TP) error {
	g.mu.Lock()
	g.assigned = append(g.assigned, tps)
	g.mu.Unlock()
	return nil
}
func (g *fakeGroup) Revoke(tps []TP) []sluice.Offset {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revoked = append(g.revoked, tps)
	return g.revoke
}
func (g *fakeGroup) Lose(tps []TP) {
	g.mu.Lock()
	g.lost = append(g.lost, tps)
	g.mu.Unlock()
}
func (g *fakeGroup) Shutdown() []sluice.Offset {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shutdown
}

func (g *fakeGroup) Unfinished() []sluice.TopicPartition { return nil }
func (g *fakeGroup) DrainTimeout() time.Duration         { return 20 * time.Second }
func (g *fakeGroup) MaxInFlight() int {
	if g.maxRecords > 0 {
		return g.maxRecords
	}
	return pipeline.DefaultMaxInFlight
}
func (g *fakeGroup) MaxInFlightBytes() int64 {
	if g.maxBytes > 0 {
		return g.maxBytes
	}
	return pipeline.DefaultMaxInFlightBytes
}
func (g *fakeGroup) Deliver(tp TP, recs []sluice.Record) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	before := g.delivered[tp]
	g.delivered[tp] += len(recs)
	if g.logging {
		if g.got == nil {
			g.got = map[TP][]int64{}
		}
		for _, r := range recs {
			g.got[tp] = append(g.got[tp], r.Offset)
		}
		g.sizes = append(g.sizes, len(recs))
	}
	p := g.pauseNext || (g.pauseAt > 0 && before < g.pauseAt && g.delivered[tp] >= g.pauseAt)
	g.pauseNext = false
	return p
}
func (g *fakeGroup) Resumable() []TP {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.resumable
	g.resumable = nil
	return out
}
func (g *fakeGroup) Wake() <-chan struct{} { return g.wake }
func (g *fakeGroup) Offsets() []sluice.Offset {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.offsets
	g.offsets = nil
	return out
}
func (g *fakeGroup) Polled() {}
func (g *fakeGroup) Joined() {}
func (g *fakeGroup) Committed(offs []sluice.Offset, _ time.Duration, err error) {
	g.mu.Lock()
	g.committed = append(g.committed, committed{offs: offs, err: err})
	g.mu.Unlock()
}
func (g *fakeGroup) HighWatermark(TP, int64) {}

// newCore is a Core over a fakeBackend and g, not running: the test
// calls its methods itself.
func newCore(g *fakeGroup) (*Core, *fakeBackend) {
	b := &fakeBackend{}
	return New(b, g, Options{Settings: Settings{Prefix: "test"}}), b
}

// harness runs a Core over a fakeBackend and a fakeGroup, inside the
// caller's synctest bubble. CommitInterval is 1s, CloseTimeout 10s (so
// the commit timeout is 4s).
type harness struct {
	t      *testing.T
	b      *fakeBackend
	g      *fakeGroup
	core   *Core
	bg     sync.WaitGroup
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T) *harness { return startLogged(t, nil) }

// startLogged is start with the core logging to log (nil: discarded).
func startLogged(t *testing.T, log *slog.Logger) *harness {
	t.Helper()
	h := &harness{t: t, g: newFakeGroup(), done: make(chan error, 1)}
	h.b = &fakeBackend{actions: make(chan func()), commits: make(chan *commitCall, 16)}
	h.core = New(h.b, h.g, Options{
		Log:        log,
		Settings:   Settings{Prefix: "test", GroupConfig: sluice.GroupConfig{CommitInterval: time.Second, CloseTimeout: 10 * time.Second}},
		Background: &h.bg,
	})
	h.b.core = h.core
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.core.Run(ctx) }()
	return h
}

// do runs f on the poll goroutine, inside a Poll, and returns once it ran.
func (h *harness) do(f func()) {
	ran := make(chan struct{})
	h.b.actions <- func() { f(); close(ran) }
	<-ran
}

// doAsync queues f for the poll goroutine and returns a channel closed
// once f returned.
func (h *harness) doAsync(f func()) <-chan struct{} {
	ran := make(chan struct{})
	go func() { h.b.actions <- func() { f(); close(ran) } }()
	return ran
}

func (h *harness) assign(tps ...TP) { h.do(func() { h.core.assign(tps) }) }

// nextCommit waits (fake time) for the core's next Commit call.
func (h *harness) nextCommit() *commitCall {
	h.t.Helper()
	select {
	case c := <-h.b.commits:
		return c
	case <-time.After(time.Minute):
		h.t.Fatal("no commit was sent within a minute")
		return nil
	}
}

// noCommit checks that no Commit call is waiting.
func (h *harness) noCommit(why string) {
	h.t.Helper()
	select {
	case c := <-h.b.commits:
		h.t.Fatalf("%s: commit of %v sent", why, c.offs)
	default:
	}
}

// stop cancels Run and returns what it returned.
func (h *harness) stop() error {
	h.cancel()
	return <-h.done
}

func (c *commitCall) ok() { c.answer <- commitAnswer{} }
