package exactlyonce

import (
	"errors"
	"testing"
)

// A Slot holds one binding: a second Bind fails with ErrAlreadyBound
// until Take empties it, and Take of an empty slot reports none.
func TestSlotBindsOnce(t *testing.T) {
	var s Slot[string]
	if _, ok := s.Take(); ok {
		t.Fatal("Take of an empty slot reported a binding")
	}
	if err := s.Bind(Binding[string]{Producer: "a", TransactionalID: "t"}); err != nil {
		t.Fatalf("first Bind = %v", err)
	}
	if err := s.Bind(Binding[string]{Producer: "b"}); !errors.Is(err, ErrAlreadyBound) {
		t.Fatalf("second Bind = %v, want ErrAlreadyBound", err)
	}
	b, ok := s.Take()
	if !ok || b.Producer != "a" || b.TransactionalID != "t" {
		t.Fatalf("Take = %+v, %v; want the first binding", b, ok)
	}
	if _, ok := s.Take(); ok {
		t.Fatal("second Take reported a binding")
	}
	if err := s.Bind(Binding[string]{Producer: "c"}); err != nil {
		t.Fatalf("Bind after Take = %v", err)
	}
}
