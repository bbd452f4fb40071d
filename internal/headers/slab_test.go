package headers

import (
	"testing"

	"github.com/sluice-go/sluice"
)

// TestSlabSlicesAreSeparate checks that consecutive slices never overlap,
// even when a record's slice is appended to, and that small slices share
// arrays (one allocation per slabLen headers).
func TestSlabSlicesAreSeparate(t *testing.T) {
	var s Slab
	a := s.Take(2)
	b := s.Take(3)
	if len(a) != 2 || cap(a) != 2 || len(b) != 3 || cap(b) != 3 {
		t.Fatalf("len/cap a %d/%d b %d/%d, want 2/2 and 3/3", len(a), cap(a), len(b), cap(b))
	}
	a[0].Key, a[1].Key = "a0", "a1"
	b[0].Key = "b0"
	a = append(a, sluice.Header{Key: "a2"}) // must not write into b
	if b[0].Key != "b0" {
		t.Fatalf("appending to a overwrote b[0]: %q", b[0].Key)
	}
	if &a[0] == &b[0] {
		t.Fatal("a and b share their first header")
	}
	if s.Take(0) != nil {
		t.Fatal("Take(0) returned a non-nil slice")
	}
	allocs := testing.AllocsPerRun(100, func() {
		for range slabLen / 4 {
			s.Take(4)
		}
	})
	if allocs != 1 {
		t.Fatalf("%v allocations for %d headers, want 1", allocs, slabLen)
	}
	big := s.Take(slabLen/4 + 1)
	if len(big) != slabLen/4+1 {
		t.Fatalf("big slice has length %d", len(big))
	}
}
