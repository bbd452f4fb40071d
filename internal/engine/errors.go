package engine

import (
	"errors"
	"reflect"

	"github.com/sluice-go/sluice"
)

// invalidMark is the dynamic type of the errors sluice.Invalid returns.
var invalidMark = reflect.TypeOf(sluice.Invalid(errors.New("")))

// InvalidCause returns the error that err wraps and true when err itself
// (not an error wrapping it) is a mark of sluice.Invalid; nil and false
// otherwise. It lets the dead-letter message take the common case's
// text without searching err's tree.
func InvalidCause(err error) (error, bool) {
	if err != nil && reflect.TypeOf(err) == invalidMark {
		return errors.Unwrap(err), true
	}
	return nil, false
}
