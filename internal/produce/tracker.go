package produce

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// Tracker is the state one producer shares between its receivers (Produce
// stages, dead-letter calls) and Close: whether Close started, how many
// delivery reports no receiver has read yet, the messages Close gave up
// on, and whether the library still delivers reports. It is safe for
// concurrent use; the zero value is not usable (see [NewTracker]).
type Tracker struct {
	names Names
	// made is when the producer was created, relative to graph builds
	// (see Stage: a producer made inside the builder is refused).
	made engine.ClientStamp

	// mu is held for reading around every call that hands a message to
	// the library; Close takes it to set closing, so no such call runs
	// once the client starts closing.
	mu      sync.RWMutex
	closing atomic.Bool
	// closingCtx ends when Close starts, so that a Send blocked on a full
	// buffer returns (and Close can take mu).
	closingCtx context.Context
	cancel     context.CancelFunc
	// pending counts messages handed to the library whose delivery report
	// no receiver has read yet; idle is closed when it drops to zero while
	// closing.
	pending  atomic.Int64
	idle     chan struct{}
	idleOnce sync.Once
	// gone is closed once the library delivers no more reports.
	gone     chan struct{}
	goneOnce sync.Once

	// stages counts the Produce stages running on the producer.
	stages atomic.Int64

	umu         sync.Mutex
	undelivered []sluice.UndeliveredMessage // given up on by Close, as receivers read them

	once     sync.Once
	closeErr error
}

// NewTracker returns the tracker of a new producer whose errors use names.
func NewTracker(names Names) *Tracker {
	ctx, cancel := context.WithCancel(context.Background())
	return &Tracker{
		names:      names,
		made:       engine.StampClient(),
		closingCtx: ctx,
		cancel:     cancel,
		idle:       make(chan struct{}),
		gone:       make(chan struct{}),
	}
}

// Names returns the backend's names the tracker was made with.
func (tr *Tracker) Names() Names { return tr.names }

// Send runs hand, the library call that accepts one message, unless
// Close started (then it returns Names.ErrClosed and hand is not called).
// A message hand accepts (it returns nil) counts as pending until its
// report is passed to Received, ReceivedN or Failed; one it refuses does not.
func (tr *Tracker) Send(hand func() error) error {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	if tr.closing.Load() {
		return tr.names.ErrClosed
	}
	tr.pending.Add(1)
	if err := hand(); err != nil {
		tr.Received()
		return err
	}
	return nil
}

// Admit counts n messages as pending unless Close started (then it
// returns Names.ErrClosed), for a library whose produce call may block
// and must not hold Close up: the caller then hands the messages over
// without a lock, and the library must report each (a message it takes
// after closing may never be reported: its receiver stops waiting at
// Gone).
func (tr *Tracker) Admit(n int) error {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	if tr.closing.Load() {
		return tr.names.ErrClosed
	}
	tr.pending.Add(int64(n))
	return nil
}

// WhileOpen runs f unless Close started, and keeps Close from starting
// while f runs (for library calls that a closing client must not get). It
// reports whether f ran.
func (tr *Tracker) WhileOpen(f func()) bool {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	if tr.closing.Load() {
		return false
	}
	f()
	return true
}

// Closing reports whether Close started.
func (tr *Tracker) Closing() bool { return tr.closing.Load() }

// ClosingContext ends when Close starts: a Send that blocks on a full
// buffer waits under a context that ends with it.
func (tr *Tracker) ClosingContext() context.Context { return tr.closingCtx }

// Pending returns how many accepted messages have a report no receiver
// read yet.
func (tr *Tracker) Pending() int64 { return tr.pending.Load() }

// Received records that a receiver read a message's delivery report (a
// success, or a failure that is not Close giving up).
func (tr *Tracker) Received() { tr.ReceivedN(1) }

// ReceivedN records that a receiver read n delivery reports, each as
// Received would (a success, or a failure that is not Close giving up).
func (tr *Tracker) ReceivedN(n int) {
	if tr.pending.Add(-int64(n)) == 0 && tr.closing.Load() {
		tr.idleOnce.Do(func() { close(tr.idle) })
	}
}

// Failed records that a receiver read a failed delivery report for
// message u; gaveUp says whether the failure is Close giving up on it
// (then u is kept for Close's error). It returns gaveUp.
func (tr *Tracker) Failed(gaveUp bool, u sluice.UndeliveredMessage) bool {
	if !gaveUp {
		tr.Received()
		return false
	}
	// Under umu, so that Close sees each message either pending or
	// undelivered, never both.
	tr.umu.Lock()
	defer tr.umu.Unlock()
	tr.undelivered = append(tr.undelivered, u)
	tr.Received()
	return true
}

// Gone is closed once the library delivers no more reports (its client
// closed): receivers stop waiting for reports then.
func (tr *Tracker) Gone() <-chan struct{} { return tr.gone }

// MarkGone closes Gone; later calls do nothing.
func (tr *Tracker) MarkGone() { tr.goneOnce.Do(func() { close(tr.gone) }) }

// stageStarted counts a Produce stage in and returns how many run now,
// itself included.
func (tr *Tracker) stageStarted() int { return int(tr.stages.Add(1)) }

// stageEnded counts a Produce stage out.
func (tr *Tracker) stageEnded() { tr.stages.Add(-1) }

// nextReport receives the next delivery report from reports. Once the
// client is gone (tr.Gone) it still takes a report already sent, and
// returns false when there is none: that report may never come.
func nextReport(tr *Tracker, reports <-chan Event) (Event, bool) {
	select {
	case ev := <-reports:
		return ev, true
	case <-tr.Gone():
		select {
		case ev := <-reports:
			return ev, true
		default:
			return nil, false
		}
	}
}
