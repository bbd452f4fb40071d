package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-go/sluice"
)

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
