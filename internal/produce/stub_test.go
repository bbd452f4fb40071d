package produce_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// The stub backend's words and errors.
var (
	errClosed    = errors.New("producer closed")
	names        = produce.Names{Package: "stub", ErrClosed: errClosed}
	errQueueFull = errors.New("queue full")
	// errGaveUp is what the stub's Close reports for a message it gave up
	// on (librdkafka's purge, kgo's abort).
	errGaveUp = errors.New("purged by close")
	// errFatal is a produce error that producing again cannot fix:
	// Classify marks it permanent.
	errFatal = errors.New("fatal")
)

// report is one of the stub's events: a delivery report, or (other) an
// event that is not one.
type report struct {
	t     stagekit.Ticket
	value string
	err   error
	other bool
}

// sentMsg is what the stub copied of an accepted Outgoing.
type sentMsg struct {
	Topic     string
	Message   sluice.Message
	Timestamp time.Time
	Ticket    stagekit.Ticket
}

// try is one Send call: the message's value and the (bubble's) time.
type try struct {
	value string
	at    time.Time
}

// String makes a report a produce.Event.
func (report) String() string { return "stub report" }

// held is a report the stub keeps until the test releases it.
type held struct {
	ch chan produce.Event
	r  report
}

// stub is a produce.Client whose library the test drives: Send accepts a
// message (through the Tracker, as a backend must) unless told to refuse
// it, and its delivery report goes to the receiver's channel at once or,
// with hold, when the test releases it. It checks the core's promise that
// a report always finds room in its channel (overflow counts those that
// did not) and records the most messages in flight (accepted, report not
// yet written).
type stub struct {
	tr *produce.Tracker

	mu      sync.Mutex
	hold    bool
	refuse  map[string]int   // value → Send calls still refused as queue full
	sendErr map[string]error // value → Send's error
	fail    map[string]error // value → its delivery report's error
	// block: value → Send blocks until its ctx ends, then accepts the
	// message with a report carrying ctx's cause (a library whose
	// produce call waits for room in its buffer).
	block map[string]bool
	// blockFull: value → its first Send waits, outside the tracker, until
	// its ctx ends, then says the queue is still full (a library waiting
	// for room in its buffer that gives up when told to).
	blockFull map[string]bool
	tries     []try
	sent      []sentMsg
	held      []held
	// inFlight counts accepted messages whose report the stub has not
	// written yet; maxInFlight is its high-water mark.
	inFlight, maxInFlight int
	overflow              int // reports that found their channel full
	// maxBuffered is what MaxBuffered answers: the most messages the
	// library would buffer (0: no bound).
	maxBuffered int
	// chunks makes the stage's client a produce.ChunkSender (chunkSender).
	chunks bool
	// chunkLens are the lengths of the SendChunk calls, in order.
	chunkLens []int
}

func (c *stub) MaxBuffered() int { return c.maxBuffered }

func newStub(tr *produce.Tracker, hold bool) *stub {
	return &stub{tr: tr, hold: hold, chunks: stubsTakeChunks, refuse: map[string]int{}, sendErr: map[string]error{}, fail: map[string]error{}, block: map[string]bool{}, blockFull: map[string]bool{}}
}

func (c *stub) Send(ctx context.Context, o *produce.Outgoing, reports chan produce.Event) error {
	c.mu.Lock()
	v := string(o.Message.Value)
	wait := c.blockFull[v]
	delete(c.blockFull, v)
	c.mu.Unlock()
	if wait {
		<-ctx.Done()
		return errQueueFull
	}
	return c.tr.Send(func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		v := string(o.Message.Value)
		c.tries = append(c.tries, try{v, time.Now()})
		if c.block[v] {
			c.mu.Unlock()
			<-ctx.Done()
			c.mu.Lock()
			c.fail[v] = context.Cause(ctx)
		}
		if c.refuse[v] > 0 {
			c.refuse[v]--
			return errQueueFull
		}
		if err := c.sendErr[v]; err != nil {
			return err
		}
		// o is the caller's, reused after the call: copy it.
		c.sent = append(c.sent, sentMsg{Topic: o.Topic, Message: o.Message, Timestamp: o.Timestamp, Ticket: o.Ticket})
		c.inFlight++
		c.maxInFlight = max(c.maxInFlight, c.inFlight)
		h := held{reports, report{t: o.Ticket, value: v, err: c.fail[v]}}
		if c.hold {
			c.held = append(c.held, h)
		} else {
			c.writeLocked(h)
		}
		return nil
	})
}

// writeLocked writes a report to its channel, never blocking (as a
// library's delivery goroutine must not).
func (c *stub) writeLocked(h held) {
	c.inFlight--
	select {
	case h.ch <- h.r:
	default:
		c.overflow++
	}
}

func (*stub) QueueFull(err error) bool { return errors.Is(err, errQueueFull) }

func (*stub) Report(ev produce.Event) (stagekit.Ticket, error, bool) {
	r := ev.(report)
	return r.t, r.err, !r.other
}

func (*stub) GaveUp(err error) bool { return errors.Is(err, errGaveUp) }

func (*stub) Classify(err error) error {
	if errors.Is(err, errFatal) || errors.Is(err, errClosed) {
		return sluice.Permanent(err)
	}
	return err
}

// closeSteps are the stub's library calls for Tracker.Close: Flush waits
// its timeout when messages are held and reports them left, GiveUp fails
// them all (giveUp), CloseClient returns at once.
func (c *stub) closeSteps() produce.CloseSteps {
	return produce.CloseSteps{
		Timeout: 5 * time.Second,
		Flush: func(d time.Duration) bool {
			if held, _, _ := c.counts(); held == 0 {
				return false
			}
			time.Sleep(d) // the bubble's clock: the library waits it out
			return true
		},
		GiveUp:      func(context.Context) { c.giveUp() },
		CloseClient: func() {},
		Logger:      quietLogger,
	}
}

// release writes the held reports of values, in that order.
func (c *stub) release(values ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range values {
		i := slices.IndexFunc(c.held, func(h held) bool { return h.r.value == v })
		if i < 0 {
			panic(fmt.Sprintf("stub: no report held for %q", v))
		}
		h := c.held[i]
		c.held = slices.Delete(c.held, i, i+1)
		c.writeLocked(h)
	}
}

// releaseAsOther writes, instead of v's held report, an event that is not
// a delivery report.
func (c *stub) releaseAsOther(v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.held, func(h held) bool { return h.r.value == v })
	h := c.held[i]
	c.held = slices.Delete(c.held, i, i+1)
	h.r = report{other: true}
	c.writeLocked(h)
}

// releaseFirst writes the n oldest held reports.
func (c *stub) releaseFirst(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.held[:n] {
		c.writeLocked(h)
	}
	c.held = slices.Delete(c.held, 0, n)
}

// deliverAll writes every held report and, from now on, reports at once.
func (c *stub) deliverAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = false
	for _, h := range c.held {
		c.writeLocked(h)
	}
	c.held = nil
}

// giveUp fails every held message as Close giving up on it, the library's
// error wrapping errGaveUp.
func (c *stub) giveUp() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.held {
		h.r.err = fmt.Errorf("message of %s: %w", h.r.value, errGaveUp)
		c.writeLocked(h)
	}
	c.held = nil
}

// sentValues returns the values of the accepted messages, in order.
func (c *stub) sentValues() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var vs []string
	for _, m := range c.sent {
		vs = append(vs, string(m.Message.Value))
	}
	return vs
}

// triesOf returns the times of the Send calls for value v.
func (c *stub) triesOf(v string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ts []time.Time
	for _, tr := range c.tries {
		if tr.value == v {
			ts = append(ts, tr.at)
		}
	}
	return ts
}

// counts returns how many messages are held, the most in flight at once
// and how many reports found their channel full.
func (c *stub) counts() (heldNow, maxInFlight, overflow int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held), c.maxInFlight, c.overflow
}
