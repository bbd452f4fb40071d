package sluice

// wraps reports whether err, or any error in its tree, is an E, with the
// rules of errors.As (Unwrap() error, Unwrap() []error, an As method)
// but without allocating: errors.As needs a pointer to a target, which
// escapes, and the runtime asks on every invalid or failed value
// (IsInvalid, IsPermanent).
func wraps[E error](err error) bool {
	for err != nil {
		if _, ok := err.(E); ok {
			return true
		}
		if x, ok := err.(interface{ As(any) bool }); ok {
			var target E
			if x.As(&target) {
				return true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if wraps[E](inner) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
