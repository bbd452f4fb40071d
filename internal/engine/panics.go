package engine

import "runtime/debug"

// CatchPanic turns a panic into a *PanicError stored in *err. It and
// CatchPanicUnless (its form for the per-value sites) are the one
// panic-capture helper of the engine and of the stage kit: every site
// that calls a user function defers one of them directly (recover only
// works in the deferred function itself), with its named error result:
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

// CatchPanicUnless is CatchPanic for the sites that call a user function
// per value: it looks for a panic only when *returned is false, so that a
// call that returned (the function sets *returned right after it) does
// not pay for recover. Defer it directly, as CatchPanic:
//
//	func call(...) (err error) {
//		returned := false
//		defer engine.CatchPanicUnless(&returned, &err)
//		err = fn(...)
//		returned = true
//		return err
//	}
func CatchPanicUnless(returned *bool, err *error) {
	if *returned {
		return
	}
	if v := recover(); v != nil {
		*err = &PanicError{Value: v, Stack: debug.Stack()}
	}
}
