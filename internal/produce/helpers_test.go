package produce_test

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// values returns the record values "v<from>" ... "v<from+n-1>".
func values(from, n int) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, "v%d", from+i)
	}
	return vs
}

// valueNames returns the values of values(from, n) as strings.
func valueNames(from, n int) []string {
	var ns []string
	for _, v := range values(from, n) {
		ns = append(ns, string(v))
	}
	return ns
}

// recordMessage is the stage's toMsg: the record's key and value.
func recordMessage(r sluice.Record) (sluice.Message, error) {
	return sluice.Message{Key: r.Key, Value: r.Value}, nil
}

// failingAt returns a toMsg that fails the record of value v with err
// and converts the others as recordMessage does.
func failingAt(v string, err error) func(sluice.Record) (sluice.Message, error) {
	return func(r sluice.Record) (sluice.Message, error) {
		if string(r.Value) == v {
			return sluice.Message{}, err
		}
		return recordMessage(r)
	}
}

// producer is a backend's Producer as the core sees it: a *produce.Core
// embedded.
type producer struct{ *produce.Core }

// newProducer returns the producer of client c with tracker tr.
func newProducer(c produce.Client, tr *produce.Tracker) producer {
	return producer{produce.NewCore(c, tr)}
}

// produceTo returns a builder whose graph produces every record to "out"
// with c and tr through the stage under test.
func produceTo(c produce.Client, tr *produce.Tracker, toMsg func(sluice.Record) (sluice.Message, error)) pipeline.Builder {
	if s, ok := c.(*stub); ok && s.chunks {
		c = chunkSender{s}
	}
	p := newProducer(c, tr)
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return produce.Stage(in, "stub.Produce", p, "out", toMsg, nil)
	}
}

// quietLogger drops what it gets; quiet keeps Run's logs (retries, the
// stopping error) out of test output.
var (
	quietLogger = slog.New(slog.DiscardHandler)
	quiet       = pipeline.WithLogger(quietLogger)
)

// run starts pipeline.Run with b over a new Fake and assigns in/0.
func run(t *testing.T, b pipeline.Builder, opts ...pipeline.Option) (*testkit.Fake, *testkit.Running) {
	t.Helper()
	f := testkit.NewFake()
	r := testkit.Start(t, f, b, append([]pipeline.Option{quiet}, opts...)...)
	must(t, f.Assign("in", 0))
	return f, r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// inBackground runs fn on its own goroutine; the channel gets its error.
func inBackground(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

// returned reports whether the goroutine of ch returned (call it after
// synctest.Wait); its error, if any, fails the test.
func returned(t *testing.T, ch <-chan error) bool {
	t.Helper()
	select {
	case err := <-ch:
		must(t, err)
		return true
	default:
		return false
	}
}

// stageError returns err's *sluice.StageError, failing the test when
// there is none.
func stageError(t *testing.T, err error) *sluice.StageError {
	t.Helper()
	var se *sluice.StageError
	if !errors.As(err, &se) {
		t.Fatalf("Run returned %v, want a *sluice.StageError", err)
	}
	return se
}

// checkStageError checks the position and the cause's text of err's
// *sluice.StageError.
func checkStageError(t *testing.T, err error, offset int64, cause string) {
	t.Helper()
	se := stageError(t, err)
	if se.Stage != "Produce#1" || se.Topic != "in" || se.Partition != 0 || se.Offset != offset {
		t.Errorf("StageError names stage %q on %s/%d at %d, want \"Produce#1\" on in/0 at %d", se.Stage, se.Topic, se.Partition, se.Offset, offset)
	}
	if got := se.Err.Error(); got != cause {
		t.Errorf("StageError's cause %q, want %q", got, cause)
	}
}

// newStage returns a stub client, holding its reports when hold, with a
// new tracker (c.tr): the stage's client before start runs it.
func newStage(hold bool) *stub {
	return newStub(produce.NewTracker(names), hold)
}

// start runs the Produce stage with c, c.tr and toMsg under Run over a
// new Fake with in/0 assigned, and sends in/0 the values v0 to v<n-1>
// (nothing when n is 0).
func (c *stub) start(t *testing.T, n int, toMsg func(sluice.Record) (sluice.Message, error), opts ...pipeline.Option) (*testkit.Fake, *testkit.Running) {
	t.Helper()
	f, r := run(t, produceTo(c, c.tr, toMsg), opts...)
	if n > 0 {
		must(t, f.Send("in", 0, values(0, n)...))
	}
	return f, r
}

// started is start, returning once every goroutine of the bubble is
// blocked (the values sent are produced as far as they can be).
func (c *stub) started(t *testing.T, n int, toMsg func(sluice.Record) (sluice.Message, error), opts ...pipeline.Option) (*testkit.Fake, *testkit.Running) {
	t.Helper()
	f, r := c.start(t, n, toMsg, opts...)
	synctest.Wait()
	return f, r
}

// checkNonePending checks that tr has no delivery report pending.
func checkNonePending(t *testing.T, tr *produce.Tracker) {
	t.Helper()
	if n := tr.Pending(); n != 0 {
		t.Errorf("tracker has %d reports pending, want 0", n)
	}
}

// checkInCommitted checks in/0's committed offset; why says what makes
// want right.
func checkInCommitted(t *testing.T, f *testkit.Fake, want int64, why string) {
	t.Helper()
	if got := f.Committed("in", 0); got != want {
		t.Errorf("committed %d, want %d (%s)", got, want, why)
	}
}

// checkSent checks the values the stub accepted, in order.
func checkSent(t *testing.T, c *stub, want ...string) {
	t.Helper()
	if got := c.sentValues(); !slices.Equal(got, want) {
		t.Fatalf("produced %v, want %v", got, want)
	}
}

// checkClosedError checks that err is the stage's error at offset (-1:
// no record) for a producer closed, wrapping ErrClosed.
func checkClosedError(t *testing.T, err error, offset int64) {
	t.Helper()
	checkStageError(t, err, offset, "producing to out: producer closed")
	if !errors.Is(err, errClosed) {
		t.Errorf("Run's error %v does not wrap ErrClosed", err)
	}
}

// waitOutPacing waits, in the bubble's time, until a new graph was fed
// every record sent: it is fed one chunk until it completes something,
// and twice as much each time nothing completes for a while (pacing,
// docs/lifecycle.md).
func waitOutPacing() {
	time.Sleep(time.Minute)
	synctest.Wait()
}

// checkBoundedByReports checks that, with every report held, c hands
// over exactly bound messages (what they are: "dead letters",
// "messages"), and that the first n reports let exactly n more through.
func checkBoundedByReports(t *testing.T, c *stub, what string, bound, n int) {
	t.Helper()
	waitOutPacing() // only the bound holds the rest back
	if got := len(c.sentValues()); got != bound {
		t.Fatalf("%d %s handed over with every report held, want %d", got, what, bound)
	}
	c.releaseFirst(n)
	synctest.Wait()
	if got := len(c.sentValues()); got != bound+n {
		t.Fatalf("%d %s handed over after %d reports, want %d", got, what, n, bound+n)
	}
}
