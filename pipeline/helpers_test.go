package pipeline_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// values returns n payloads "0".."n-1".
func values(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(strconv.Itoa(i))
	}
	return out
}

// assignAndSend assigns t/0 to h and sends it n records, values(n).
func assignAndSend(h *testkit.Harness, n int) {
	h.Assign("t", 0)
	h.Send("t", 0, values(n)...)
}

// deadLettered runs build on t/0 with a dead-letter destination, sends n
// records, waits until all n are committed, and returns the offsets
// dead-lettered in the order they arrived ("[3 5]").
func deadLettered(t *testing.T, n int, build pipeline.Builder) string {
	t.Helper()
	dead := testkit.NewDeadLetters()
	h := testkit.New(t, build, dead.Option())
	assignAndSend(h, n)
	h.WaitCommitted("t", 0, int64(n))
	return deadOffsets(dead)
}

// checkCommitted checks t/0's committed offset; when says when, or why
// want is right.
func checkCommitted(t *testing.T, h *testkit.Harness, want int64, when string) {
	t.Helper()
	if got := h.Committed("t", 0); got != want {
		if when != "" {
			when = " " + when
		}
		t.Fatalf("committed %d%s, want %d", got, when, want)
	}
}

// deadOffsets lists the offsets of dead, in the order they arrived
// ("[3 5]").
func deadOffsets(dead *testkit.DeadLetters) string {
	var offs []int64
	for _, dl := range dead.Records() {
		offs = append(offs, dl.Record.Offset)
	}
	return fmt.Sprint(offs)
}

// eachHarness starts a Harness with opts whose graph is one Each stage
// calling do for every record.
func eachHarness(t *testing.T, do func(context.Context, sluice.Record) error, opts ...pipeline.Option) *testkit.Harness {
	t.Helper()
	return testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, do)
	}, opts...)
}
