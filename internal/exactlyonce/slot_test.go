package exactlyonce

import (
	"errors"
	"testing"
)

// A Slot holds one binding: a second Bind fails with ErrAlreadyBound,
// Take empties it, and a Bind after Take (the source's Run started) fails
// with ErrRunStarted; Take of an empty slot reports none and closes it
// too.
func TestSlotBindsOnceBeforeTake(t *testing.T) {
	var empty Slot[string]
	if _, ok := empty.Take(); ok {
		t.Fatal("Take of an empty slot reported a binding")
	}
	if err := empty.Bind(Binding[string]{Producer: "late"}); !errors.Is(err, ErrRunStarted) {
		t.Fatalf("Bind after the Take of an empty slot = %v, want ErrRunStarted", err)
	}
	var s Slot[string]
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
	if err := s.Bind(Binding[string]{Producer: "c"}); !errors.Is(err, ErrRunStarted) {
		t.Fatalf("Bind after Take = %v, want ErrRunStarted", err)
	}
}
