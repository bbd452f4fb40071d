package sluice

import "fmt"

// PanicError is a panic recovered from a user function: a stage function,
// an OnClose hook or the dead-letter function (Run returns it inside a
// *[StageError]), or a builder (inside a *[BuildError], as its Err). It is
// never retried. Use it as *PanicError with errors.As.
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
