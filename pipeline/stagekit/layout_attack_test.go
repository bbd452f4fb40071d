package stagekit

import (
	"testing"

	"github.com/sluice-go/sluice/internal/engine"
)

// big is a value type larger than the data and bss segments of a test
// binary: a pointer to an empty allocation (runtime.zerobase) converted to
// a *Item[big] straddles the segment's end.
type big [1 << 26]byte

// An empty, non-nil chunk (what []Item[T]{} or make(..., 0) is: its array
// is the runtime's zero-size allocation) converts either way whatever T's
// size, as a nil one does.
func TestEmptyChunkOfALargeTypeConverts(t *testing.T) {
	c := items(make([]engine.Item[big], 0))
	if len(c) != 0 {
		t.Fatalf("len %d", len(c))
	}
	ec := engineItems([]Item[big]{})
	if len(ec) != 0 {
		t.Fatalf("len %d", len(ec))
	}
}
