package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-go/sluice"
)

// asPanic claims, through an As method, to be a panic.
type asPanic struct{}

func (asPanic) Error() string { return "claims to be a panic" }
func (asPanic) As(target any) bool {
	if p, ok := target.(**PanicError); ok {
		*p = &PanicError{Value: "inner"}
		return true
	}
	return false
}

// wraps answers as errors.As does on every shape of error tree, and does
// not allocate.
func TestWrapsMatchesErrorsAs(t *testing.T) {
	base := errors.New("base")
	pe := &PanicError{Value: base}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"nil", nil},
		{"plain", base},
		{"panic", pe},
		{"wrapped", fmt.Errorf("ctx: %w", pe)},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", pe))},
		{"joined, second", errors.Join(base, fmt.Errorf("x: %w", pe))},
		{"joined, none", errors.Join(base, errors.New("other"))},
		{"multi %w", fmt.Errorf("%w and %w", base, pe)},
		{"wrapped join", fmt.Errorf("w: %w", errors.Join(base, pe))},
		{"As method", fmt.Errorf("w: %w", asPanic{})},
		{"invalid around panic", sluice.Invalid(pe)},
		{"not wrapped (%v)", fmt.Errorf("lost: %v", pe)},
	} {
		var target *PanicError
		if got, want := wraps[*PanicError](tc.err), errors.As(tc.err, &target); got != want {
			t.Errorf("%s: wraps = %v, errors.As = %v", tc.name, got, want)
		}
	}
	err := fmt.Errorf("ctx: %w", errors.Join(base, pe))
	if n := testing.AllocsPerRun(100, func() { _ = wraps[*PanicError](err) }); n != 0 {
		t.Errorf("wraps allocates %v times, want 0", n)
	}
}

// InvalidCause finds sluice.Invalid's mark only at the top of the tree.
func TestInvalidCause(t *testing.T) {
	base := errors.New("base")
	if c, ok := InvalidCause(sluice.Invalid(base)); !ok || c != base {
		t.Errorf("InvalidCause(Invalid(base)) = %v, %v; want base, true", c, ok)
	}
	for _, err := range []error{nil, base, fmt.Errorf("w: %w", sluice.Invalid(base)), sluice.Permanent(base)} {
		if c, ok := InvalidCause(err); ok || c != nil {
			t.Errorf("InvalidCause(%v) = %v, %v; want nil, false", err, c, ok)
		}
	}
}
