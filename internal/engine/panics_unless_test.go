package engine

import (
	"errors"
	"testing"
)

func callUnless(fn func() error) (err error) {
	returned := false
	defer CatchPanicUnless(&returned, &err)
	err = fn()
	returned = true
	return err
}

// CatchPanicUnless turns a panic into a *PanicError and leaves what a
// function that returned gave back alone.
func TestCatchPanicUnless(t *testing.T) {
	want := errors.New("failed")
	if err := callUnless(func() error { return want }); err != want {
		t.Fatalf("a returned error came back as %v", err)
	}
	if err := callUnless(func() error { return nil }); err != nil {
		t.Fatalf("a nil result came back as %v", err)
	}
	err := callUnless(func() error { panic("boom") })
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Fatalf("a panic came back as %#v, want a *PanicError with the value and a stack", err)
	}
}
