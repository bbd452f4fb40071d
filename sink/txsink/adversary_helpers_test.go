package txsink_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// advRun is one life of an exactly-once member: a fresh Fake and Writer
// over a shared store, with dl as its dead-letter destination.
type advRun struct {
	f  *testkit.Fake
	r  *testkit.Running
	w  *txsink.Writer[int]
	dl *testkit.DeadLetters
}

func advStart(t *testing.T, s *txsinktest.MemStore[int], o txsink.Options[int], dl *testkit.DeadLetters, log [][]byte, opts ...pipeline.Option) *advRun {
	t.Helper()
	o.ExactlyOnce = true
	w := txsink.New[int](s, o)
	f := testkit.NewFake()
	f.UseOffsetStore(w, group)
	opts = append(opts, dl.Option())
	r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return w.Write(toInt(in))
	}, opts...)
	if len(log) > 0 {
		must(t, f.Send(topic, 0, log...))
	}
	must(t, f.Assign(topic, 0))
	return &advRun{f: f, r: r, w: w, dl: dl}
}

// crash loses the partition and stops Run, accepting the dead letters it
// could not deliver.
func (a *advRun) crash(t *testing.T) {
	t.Helper()
	must(t, a.f.Lose(topic, 0))
	if err := a.r.Stop(t); err != nil && !errors.Is(err, sluice.ErrNotDeadLettered) {
		t.Fatal(err)
	}
}

// stuckDeadLetters never delivers a dead letter.
func stuckDeadLetters() *testkit.DeadLetters {
	dl := testkit.NewDeadLetters()
	dl.FailWith(func(sluice.DeadLetter) error { return errors.New("dead-letter topic down") })
	return dl
}

// linger lets a partial batch's linger pass (fake time) and everything settle.
func linger(t *testing.T) {
	t.Helper()
	time.Sleep(2 * txsink.DefaultLinger)
	synctest.Wait()
}

func bs(vs ...string) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out
}
