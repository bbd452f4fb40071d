package stagekit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Protect turns a panic of the function into a *sluice.PanicError that
// carries the panic value and the panicking goroutine's stack.
func TestProtectReturnsAPanicAsPanicError(t *testing.T) {
	_, err := stagekit.Protect(context.Background(), 7, func(_ context.Context, v int) (int, error) {
		panic("boom")
	})
	var pe *sluice.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Protect returned %v, want a *sluice.PanicError", err)
	}
	if pe.Value != "boom" || !strings.Contains(string(pe.Stack), "call_test.go") {
		t.Fatalf("PanicError value %v, stack:\n%s\nwant the value \"boom\" and a stack through this test", pe.Value, pe.Stack)
	}
}

// Protect passes the value through and returns the function's result and
// error untouched.
func TestProtectReturnsTheFunctionsResult(t *testing.T) {
	want := errors.New("bad")
	got, err := stagekit.Protect(context.Background(), 7, func(_ context.Context, v int) (int, error) { return v * 2, want })
	if got != 14 || err != want {
		t.Fatalf("Protect = %d, %v; want 14, %v", got, err, want)
	}
}
