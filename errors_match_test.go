package sluice

import (
	"errors"
	"fmt"
	"testing"
)

// asInvalid claims, through an As method, to be an invalid-input error.
type asInvalid struct{}

func (asInvalid) Error() string { return "claims to be invalid" }
func (asInvalid) As(target any) bool {
	if p, ok := target.(**invalidError); ok {
		*p = &invalidError{err: errors.New("inner")}
		return true
	}
	return false
}

// wraps answers as errors.As does on every shape of error tree, and does
// not allocate.
func TestWrapsMatchesErrorsAs(t *testing.T) {
	base := errors.New("base")
	inv := Invalid(base)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"nil", nil},
		{"plain", base},
		{"marked", inv},
		{"wrapped", fmt.Errorf("ctx: %w", inv)},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", inv))},
		{"joined, second", errors.Join(base, fmt.Errorf("x: %w", inv))},
		{"joined, none", errors.Join(base, errors.New("other"))},
		{"multi %w", fmt.Errorf("%w and %w", base, inv)},
		{"wrapped join", fmt.Errorf("w: %w", errors.Join(base, inv))},
		{"As method", fmt.Errorf("w: %w", asInvalid{})},
		{"permanent around invalid", Permanent(inv)},
		{"not wrapped (%v)", fmt.Errorf("lost: %v", inv)},
	} {
		var ie *invalidError
		if got, want := IsInvalid(tc.err), errors.As(tc.err, &ie); got != want {
			t.Errorf("%s: IsInvalid = %v, errors.As = %v", tc.name, got, want)
		}
		var pe *permanentError
		if got, want := IsPermanent(tc.err), errors.As(tc.err, &pe); got != want {
			t.Errorf("%s: IsPermanent = %v, errors.As = %v", tc.name, got, want)
		}
	}
	err := fmt.Errorf("ctx: %w", errors.Join(base, inv))
	if n := testing.AllocsPerRun(100, func() { _ = IsInvalid(err) && IsPermanent(err) }); n != 0 {
		t.Errorf("IsInvalid and IsPermanent allocate %v times, want 0", n)
	}
}
