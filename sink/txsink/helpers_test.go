package txsink_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

const (
	topic = "events"
	group = "g"
)

// values returns the record values "0" .. "n-1" (a value "-k" is refused
// by a store with refuseNegative).
func values(from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(strconv.Itoa(from + i))
	}
	return out
}

// toInt is the graph before the Writer: each record's value as an int.
func toInt(in pipeline.Stream[sluice.Record]) pipeline.Stream[int] {
	return stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) {
		return strconv.Atoi(string(r.Value))
	})
}

// graph is a member's graph, ending in its Writer w.
type graph func(w *txsink.Writer[int]) pipeline.Builder

// intsInto is the usual graph: each record's value as an int, into w.
func intsInto(w *txsink.Writer[int]) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return w.Write(toInt(in))
	}
}

// member is one life of a consumer of the group: a Fake source running a
// graph that ends in the Writer w, whose offset store w is in
// exactly-once mode.
type member struct {
	fake *testkit.Fake
	run  *testkit.Running
	w    *txsink.Writer[int]
}

// startMember starts a member whose Writer of options o writes to s
// through the graph intsInto; opts (a dead-letter destination, a retry
// policy) go to the pipeline. Nothing is assigned yet (assign).
func startMember(t *testing.T, s txsink.Store[int], o txsink.Options[int], opts ...pipeline.Option) *member {
	t.Helper()
	return startGraph(t, s, o, intsInto, opts...)
}

// startGraph is startMember with the graph g.
func startGraph(t *testing.T, s txsink.Store[int], o txsink.Options[int], g graph, opts ...pipeline.Option) *member {
	t.Helper()
	w := txsink.New[int](s, o)
	f := testkit.NewFake()
	if o.ExactlyOnce {
		f.UseOffsetStore(w, group)
	}
	return &member{fake: f, run: testkit.Start(t, f, g(w), opts...), w: w}
}

// assign sends log to partition 0 and assigns it to the member.
func (m *member) assign(t *testing.T, log ...[]byte) {
	t.Helper()
	if len(log) > 0 {
		must(t, m.fake.Send(topic, 0, log...))
	}
	must(t, m.fake.Assign(topic, 0))
}

// assignCommitted sends the values 0..n-1 to partition 0, assigns it to
// the member and waits until the member committed them.
func (m *member) assignCommitted(t *testing.T, n int) {
	t.Helper()
	m.assign(t, values(0, n)...)
	m.fake.WaitCommitted(t, topic, 0, int64(n))
}

// runToCommitted runs a member of s with o and opts over the values
// 0..n-1 of partition 0 until it committed them, then stops it.
func runToCommitted(t *testing.T, s txsink.Store[int], o txsink.Options[int], n int, opts ...pipeline.Option) {
	t.Helper()
	m := startMember(t, s, o, opts...)
	m.assignCommitted(t, n)
	must(t, m.run.Stop(t))
}

// lose takes partition 0 away as lost and stops the member, accepting
// the dead letters it could not deliver.
func (m *member) lose(t *testing.T) {
	t.Helper()
	must(t, m.fake.Lose(topic, 0))
	if err := m.run.Stop(t); err != nil && !errors.Is(err, sluice.ErrNotDeadLettered) {
		t.Fatal(err)
	}
}

// finish waits until the member committed partition 0 up to offset n,
// checks that s holds the rows 0..n-1, each once, and stops the member.
func (m *member) finish(t *testing.T, s *txsinktest.MemStore[int], n int) {
	t.Helper()
	m.fake.WaitCommitted(t, topic, 0, int64(n))
	sameInts(t, "rows", s.Rows(), seq(0, n))
	must(t, m.run.Stop(t))
}

// deadLettered fails unless dl holds the dead letters of exactly the
// offsets want of partition 0, in order.
func deadLettered(t *testing.T, dl *testkit.DeadLetters, want ...int64) {
	t.Helper()
	if got := dl.Offsets(topic, 0); !slices.Equal(got, want) {
		t.Fatalf("dead letters at offsets %v; want %v", got, want)
	}
}

// lastLife starts a member of g with a dead-letter destination, hands it
// log on partition 0, waits until offset end is committed, and checks the
// rows in s and the offsets dead-lettered in this life; then it stops the
// member.
func lastLife(t *testing.T, s *txsinktest.MemStore[int], o txsink.Options[int], g graph, log [][]byte, end int64, rows []int, dead ...int64) {
	t.Helper()
	dl := testkit.NewDeadLetters()
	m := startGraph(t, s, o, g, dl.Option())
	m.assign(t, log...)
	m.fake.WaitCommitted(t, topic, 0, end)
	sameInts(t, "rows", s.Rows(), rows)
	deadLettered(t, dl, dead...)
	must(t, m.run.Stop(t))
}

// inBothModes runs test in a synctest bubble twice, as the subtests "at
// least once" and "exactly once"; eos tells which.
func inBothModes(t *testing.T, test func(t *testing.T, eos bool)) {
	for _, eos := range []bool{false, true} {
		t.Run(map[bool]string{false: "at least once", true: "exactly once"}[eos], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { test(t, eos) })
		})
	}
}

// stuckDeadLetters is a dead-letter destination that never delivers.
func stuckDeadLetters() pipeline.Option {
	dl := testkit.NewDeadLetters()
	dl.FailWith(func(sluice.DeadLetter) error { return errors.New("dead-letter topic down") })
	return dl.Option()
}

// linger lets a partial batch's linger pass (fake time) and everything
// settle.
func linger(t *testing.T) {
	t.Helper()
	time.Sleep(2 * txsink.DefaultLinger)
	synctest.Wait()
}

// bs returns the record values vs.
func bs(vs ...string) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out
}

// badIsInvalid is the graph that refuses the record value "bad" as
// invalid (a record the graph cannot map) and writes the others as ints.
func badIsInvalid(w *txsink.Writer[int]) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return w.Write(stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) {
			if string(r.Value) == "bad" {
				return 0, sluice.Invalid(errors.New("bad record"))
			}
			return strconv.Atoi(string(r.Value))
		}))
	}
}

// sameInts fails t unless got holds exactly want, in any order, each as
// often; seq returns the numbers from through to-1.
var sameInts, seq = txsinktest.SameRows, txsinktest.Numbers

func position(t *testing.T, s *txsinktest.MemStore[int], p int32) txsink.Position {
	t.Helper()
	pos, ok := s.Position(group, sluice.TopicPartition{Topic: topic, Partition: p})
	if !ok {
		t.Fatalf("no position stored for %s[%d]", topic, p)
	}
	return pos
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
