package engine

import (
	"errors"
	"runtime"
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

// panic(nil) is a panic too (a *runtime.PanicNilError since Go 1.21): it
// becomes a *PanicError, as it did with CatchPanic.
func TestCatchPanicUnlessPanicNil(t *testing.T) {
	err := callUnless(func() error { panic(nil) })
	var pe *PanicError
	var pn *runtime.PanicNilError
	if !errors.As(err, &pe) || !errors.As(pe.Value.(error), &pn) {
		t.Fatalf("panic(nil) came back as %#v, want a *PanicError holding a *runtime.PanicNilError", err)
	}
}

// A function that recovers its own panic and returns is a return: its
// result stands.
func TestCatchPanicUnlessSelfRecovered(t *testing.T) {
	want := errors.New("recovered")
	err := callUnless(func() (err error) {
		defer func() {
			if recover() != nil {
				err = want
			}
		}()
		panic("inner")
	})
	if err != want {
		t.Fatalf("a function that recovered itself came back as %v, want %v", err, want)
	}
}

// runtime.Goexit (t.FailNow in a stage function) is not a panic: the
// goroutine still exits, running the defers, and no *PanicError is made
// up, as with CatchPanic.
func TestCatchPanicUnlessGoexit(t *testing.T) {
	for name, call := range map[string]func(func() error) error{
		"CatchPanic": func(fn func() error) (err error) {
			defer CatchPanic(&err)
			return fn()
		},
		"CatchPanicUnless": callUnless,
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			returned := false
			done := make(chan struct{})
			go func() {
				defer close(done)
				err = call(func() error { runtime.Goexit(); return nil })
				returned = true
			}()
			<-done
			if returned || err != nil {
				t.Fatalf("after Goexit: the call returned %v (err %v), want the goroutine gone with no error", returned, err)
			}
		})
	}
}
