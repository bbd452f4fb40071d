package produce

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/sluice-go/sluice"
)

// Core is the client-independent half of one producer: its [Client] and
// [Tracker]. A backend's Producer embeds a *Core made by [NewCore]
// through an unexported alias (type core = produce.Core, then the
// embedded field *core), which gives the Producer the unexported method
// of [Backend], and so makes it a sink.Producer, without adding anything
// to its exported API. Core has no exported methods for that reason.
type Core struct {
	client Client
	tr     *Tracker
}

// NewCore returns the core of a producer whose library is c and whose
// receivers and Close share tr.
func NewCore(c Client, tr *Tracker) *Core { return &Core{client: c, tr: tr} }

// produceCore returns c; it is nil for a zero Producer (one not made by
// its constructor), whose embedded *Core is nil.
func (c *Core) produceCore() *Core { return c }

// Backend is implemented by exactly the types that embed a *[Core]: the
// producers of Sluice's backends (and testkit's fake). sink.Producer
// embeds it, so that no other type implements sink.Producer: the Produce
// stage and the dead-letter destination rely on the core's bookkeeping
// (the outstanding bound, the tracker Close reads), which a producer
// written elsewhere could not keep.
type Backend interface {
	produceCore() *Core
}

// isNil reports whether p is a nil interface or holds a nil pointer (on
// which produceCore would dereference the nil Producer). It runs once per
// graph build, not per message.
func isNil(p Backend) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// CoreDeadLetter returns the dead-letter destination of topic on the
// producer whose core is c: [CheckedDeadLetter] with c's client and
// tracker. name is the user's method ("franz: Producer.DeadLetter"). For
// a nil c (a zero Producer value, not made by its constructor) every
// call, the start check included, fails with a permanent error saying so.
func CoreDeadLetter(c *Core, name, topic string) func(ctx context.Context, dl sluice.DeadLetter) error {
	if c == nil {
		err := sluice.Permanent(fmt.Errorf("%s: %w", name, ErrNotConstructed))
		return func(context.Context, sluice.DeadLetter) error { return err }
	}
	return CheckedDeadLetter(c.client, c.tr, name, topic)
}

// ErrNotConstructed is the error of a zero Producer value's DeadLetter
// and Close: the producer was not made by its constructor.
var ErrNotConstructed = errors.New("the producer was not made by its constructor")
