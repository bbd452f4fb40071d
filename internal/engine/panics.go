package engine

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered from a user function: a stage function,
// an OnClose hook or the dead-letter function (Run returns it inside a
// *StageError), or a builder (inside a *BuildError, as its Err). It is
// never retried.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack
}

// Error returns the panic value and the stack of the panicking goroutine.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value when it is an error (panic(err)), so that
// errors.Is and errors.As see through the panic; otherwise nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// CatchPanic turns a panic into a *PanicError stored in *err. It is the
// one panic-capture helper of the engine and of the stage kit: every site
// that calls a user function defers it directly (recover only works in the
// deferred function itself), with its named error result:
//
//	func call(...) (err error) {
//		defer engine.CatchPanic(&err)
//		return fn(...)
//	}
//
// Without a panic it leaves *err as the function returned it.
func CatchPanic(err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Value: v, Stack: debug.Stack()}
	}
}
