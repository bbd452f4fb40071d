package engine

import "runtime/debug"

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
