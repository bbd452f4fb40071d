package txsink_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

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

// member is one consumer of the group: a Fake source whose offset store
// is w (in exactly-once mode), running a graph that ends in w.
type member struct {
	fake *testkit.Fake
	run  *testkit.Running
	w    *txsink.Writer[int]
}

func startMember(t *testing.T, w *txsink.Writer[int], opts ...pipeline.Option) *member {
	t.Helper()
	f := testkit.NewFake()
	f.UseOffsetStore(w, group)
	r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return w.Write(toInt(in))
	}, opts...)
	return &member{fake: f, run: r, w: w}
}

// sameInts fails unless got holds exactly want, in any order, each once.
func sameInts(t *testing.T, what string, got []int, want []int) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: rows %v, want %v", what, got, want)
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

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

var _ = fmt.Sprint
