package stagekit

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// checkItemLayout fails t unless Item[T] and engine.Item[T] have the same
// size, alignment and field offsets: what layout.go's conversions of
// chunks rely on.
func checkItemLayout[T any](t *testing.T) {
	t.Helper()
	var a Item[T]
	var b engine.Item[T]
	name := reflect.TypeFor[T]().String()
	if unsafe.Sizeof(a) != unsafe.Sizeof(b) || unsafe.Alignof(a) != unsafe.Alignof(b) ||
		unsafe.Offsetof(a.Value) != unsafe.Offsetof(b.Value) || unsafe.Offsetof(a.Ticket) != unsafe.Offsetof(b.Ticket) ||
		unsafe.Sizeof(a.Ticket) != unsafe.Sizeof(b.Ticket) {
		t.Errorf("Item[%s]: size %d, align %d, offsets %d/%d; engine.Item[%[1]s]: size %d, align %d, offsets %d/%d; they must match",
			name, unsafe.Sizeof(a), unsafe.Alignof(a), unsafe.Offsetof(a.Value), unsafe.Offsetof(a.Ticket),
			unsafe.Sizeof(b), unsafe.Alignof(b), unsafe.Offsetof(b.Value), unsafe.Offsetof(b.Ticket))
	}
}

func TestItemHasTheEnginesLayout(t *testing.T) {
	checkItemLayout[sluice.Record](t)
	checkItemLayout[int8](t)
	checkItemLayout[int64](t)
	checkItemLayout[string](t)
	checkItemLayout[[]sluice.Record](t)
	checkItemLayout[struct{}](t)
	checkItemLayout[[3]byte](t)
	checkItemLayout[*int](t)
	checkItemLayout[any](t)
	if unsafe.Sizeof(Ticket{}) != unsafe.Sizeof(engine.Ticket{}) || unsafe.Alignof(Ticket{}) != unsafe.Alignof(engine.Ticket{}) {
		t.Errorf("Ticket: size %d, align %d; engine.Ticket: size %d, align %d; they must match",
			unsafe.Sizeof(Ticket{}), unsafe.Alignof(Ticket{}), unsafe.Sizeof(engine.Ticket{}), unsafe.Alignof(engine.Ticket{}))
	}
}

// A converted chunk is the same array: values and tickets written on one
// side are read on the other, length and capacity are kept, and nil stays
// nil.
func TestChunkConversionsShareTheArray(t *testing.T) {
	ec := make([]engine.Item[string], 2, 5)
	ec[0].Value, ec[1].Value = "a", "b"
	c := items(ec)
	if len(c) != 2 || cap(c) != 5 || unsafe.Pointer(&c[0]) != unsafe.Pointer(&ec[0]) || c[1].Value != "b" {
		t.Fatalf("items: len %d cap %d, values %v; want the engine chunk's array, len 2 cap 5", len(c), cap(c), c)
	}
	c = append(c, Item[string]{Value: "c"})
	back := engineItems(c)
	if len(back) != 3 || cap(back) != 5 || back[2].Value != "c" || &back[0] != &ec[0] {
		t.Fatalf("engineItems: len %d cap %d, values %v; want the same array, len 3 cap 5", len(back), cap(back), back)
	}
	if items[int](nil) != nil || engineItems[int](nil) != nil || tickets(nil) != nil || engineTickets(nil) != nil {
		t.Fatal("a nil chunk or ticket slice converted to a non-nil one")
	}
	ets := []engine.Ticket{{}, {}}
	ts := tickets(ets)
	if len(ts) != 2 || unsafe.Pointer(&ts[0]) != unsafe.Pointer(&ets[0]) || &engineTickets(ts)[1] != &ets[1] {
		t.Fatal("ticket slices are not converted in place")
	}
}

// The channel C returns is the input's own channel, its chunks the ones
// sent.
func TestItemChanIsTheSameChannel(t *testing.T) {
	ch := make(chan []engine.Item[int], 1)
	ec := []engine.Item[int]{{Value: 7}}
	ch <- ec
	got := <-itemChan((<-chan []engine.Item[int])(ch))
	if len(got) != 1 || got[0].Value != 7 || unsafe.Pointer(&got[0]) != unsafe.Pointer(&ec[0]) {
		t.Fatalf("received %v through the converted channel, want the chunk sent", got)
	}
}

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
