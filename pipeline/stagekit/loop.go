package stagekit

import (
	"errors"
	"time"
)

// ErrStop, returned by a [Loop] callback, ends the loop and the stage
// without an error: for a stage that has nothing left to do (an Outlet's
// Send returned false, a failure was already reported with [Stage.Abort]).
var ErrStop = errors.New("stagekit: stop the stage")

// Loop is what a stage does with its input, for [RunLoop]: the kit owns
// the receive loop, the cancellation checks and the release of chunks,
// the stage supplies callbacks. Every callback runs on the stage's
// goroutine, one at a time; its error ends the loop, and [RunLoop]
// returns it ([ErrStop]: nil). Nothing is called once the stage's context
// is done: RunLoop then returns nil at once, and the values in hand are
// dropped uncompleted.
//
// E is the type of Events' values; use struct{} when there are none.
type Loop[In, E any] struct {
	// OnChunk handles one received chunk (required). The kit releases the
	// chunk when OnChunk returns, unless KeepChunks is set.
	OnChunk func(chunk []Item[In]) error
	// KeepChunks hands each chunk over to OnChunk, which must release it
	// with [Inlet.Release] once its values are no longer referenced (a
	// stage whose workers hold the values after OnChunk returned).
	KeepChunks bool
	// OnDrain is called once when the input closed (a graceful revoke or
	// shutdown drained everything upstream): flush what the stage holds.
	// The loop then ends with its error. Optional.
	OnDrain func() error
	// Timer, when not nil, is the stage's timer: OnTick is called when it
	// fires (it is then disarmed; re-arm it from any callback). The kit
	// stops it when the loop ends.
	Timer  *Timer
	OnTick func(now time.Time) error
	// Events, when not nil, is a channel of events for the stage (delivery
	// reports): OnEvent is called with each.
	Events  <-chan E
	OnEvent func(ev E) error
	// Wake, when not nil, returns the channel to wait on for a signal from
	// elsewhere (it is called before each wait, so the channel may
	// change): OnWake is called when it is ready (closed, or sent to).
	Wake   func() <-chan struct{}
	OnWake func() error
}

// RunLoop runs l on the stage's input until the input closed (after
// OnDrain), the stage's context is done, or a callback returned an error.
// Call it from a stage's run function (see [AddStage]) and return what it
// returns. It never calls a callback for a chunk received once the
// context is done: select picks ready cases at random, so a stage
// selecting on [Inlet.C] itself would have to check.
func RunLoop[In, E any](s *Stage, in *Inlet[In], l Loop[In, E]) error {
	if l.Timer != nil {
		defer l.Timer.Stop()
	}
	err := runLoop(s, in, &l)
	if err == ErrStop {
		return nil
	}
	return err
}

// ForEachChunk runs fn on every chunk of the stage's input, releasing each
// after fn returned, until the input closed or the context is done, or fn
// returned an error ([ErrStop]: nil): [RunLoop] with only OnChunk.
func ForEachChunk[In any](s *Stage, in *Inlet[In], fn func(chunk []Item[In]) error) error {
	return RunLoop(s, in, Loop[In, struct{}]{OnChunk: fn})
}

func runLoop[In, E any](s *Stage, in *Inlet[In], l *Loop[In, E]) error {
	ctx := s.Context()
	plain := l.Timer == nil && l.Events == nil && l.Wake == nil
	for {
		var chunk []Item[In]
		if plain {
			c, ok := in.Recv()
			if !ok {
				return drained(s, l)
			}
			chunk = c
		} else {
			var tick <-chan time.Time
			if l.Timer != nil {
				tick = l.Timer.c
			}
			var wake <-chan struct{}
			if l.Wake != nil {
				wake = l.Wake()
			}
			var err error
			select {
			case <-ctx.Done():
				return nil
			case now := <-tick:
				l.Timer.c = nil
				err = l.OnTick(now)
			case ev := <-l.Events:
				err = l.OnEvent(ev)
			case <-wake:
				err = l.OnWake()
			case c, ok := <-in.C():
				if ctx.Err() != nil {
					return nil // cancelled: drop what was still buffered
				}
				if !ok {
					return drained(s, l)
				}
				chunk = c
			}
			if err != nil {
				return err
			}
			if chunk == nil {
				if ctx.Err() != nil {
					return nil
				}
				continue
			}
		}
		err := l.OnChunk(chunk)
		if !l.KeepChunks {
			in.Release(chunk)
		}
		if err != nil {
			return err
		}
	}
}

// drained ends the loop when Recv returned false: OnDrain if the input
// closed, nothing if the context is done.
func drained[In, E any](s *Stage, l *Loop[In, E]) error {
	if s.Context().Err() != nil || l.OnDrain == nil {
		return nil
	}
	return l.OnDrain()
}

// Timer is a stage's timer for [Loop]: armed and stopped from the stage's
// goroutine only. The zero Timer is not usable; create one with NewTimer.
type Timer struct {
	t *time.Timer
	c <-chan time.Time // t.C while armed
}

// NewTimer returns a disarmed timer.
func NewTimer() *Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Timer{t: t}
}

// Arm makes the timer fire once after d, replacing any earlier arming.
func (t *Timer) Arm(d time.Duration) {
	t.t.Reset(d)
	t.c = t.t.C
}

// Stop disarms the timer.
func (t *Timer) Stop() {
	t.t.Stop()
	t.c = nil
}

// Armed reports whether the timer will fire.
func (t *Timer) Armed() bool { return t.c != nil }
