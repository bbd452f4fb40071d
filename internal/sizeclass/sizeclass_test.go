package sizeclass

import "testing"

func TestClasses(t *testing.T) {
	for _, tc := range []struct{ n, class int }{{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {256, 8}, {257, 9}} {
		if got := For(tc.n); got != tc.class {
			t.Errorf("For(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
	for _, tc := range []struct{ c, class int }{{1, 0}, {2, 1}, {3, 1}, {4, 2}, {255, 7}, {256, 8}} {
		if got := OfCap(tc.c); got != tc.class {
			t.Errorf("OfCap(%d) = %d, want %d", tc.c, got, tc.class)
		}
	}
}

// Take hands out the smallest class at or above the one asked, last given
// back first, and nothing below it.
func TestListsTakeSmallestFittingClass(t *testing.T) {
	var l Lists[string]
	l.Put(3, "a3")
	l.Put(5, "a5")
	l.Put(5, "b5")
	if v, ok := l.Take(4); !ok || v != "b5" {
		t.Fatalf("Take(4) = %q %v, want b5", v, ok)
	}
	if v, ok := l.Take(2); !ok || v != "a3" {
		t.Fatalf("Take(2) = %q %v, want a3", v, ok)
	}
	if v, ok := l.Take(6); ok {
		t.Fatalf("Take(6) = %q, want none (only class 5 left)", v)
	}
	if n := l.Len(5); n != 1 {
		t.Fatalf("Len(5) = %d, want 1", n)
	}
	if v, ok := l.Take(0); !ok || v != "a5" {
		t.Fatalf("Take(0) = %q %v, want a5", v, ok)
	}
	if _, ok := l.Take(0); ok {
		t.Fatal("Take from empty lists succeeded")
	}
	l.Put(1, "x")
	l.Clear()
	if _, ok := l.Take(0); ok || l.Len(1) != 0 {
		t.Fatal("Clear left an object")
	}
}
