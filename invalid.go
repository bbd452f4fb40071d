package sluice

// Invalid marks err as bad input: the record (or records) the failing value
// came from is sent to the dead-letter destination and its offset counts as
// done. Stage functions return Invalid(err) for data they can never process
// (malformed JSON, a missing field); any other error is retried, then stops
// Run. Invalid(nil) is nil. The returned error wraps err; its text is
// "invalid input: " followed by err's.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &invalidError{err: err}
}

// IsInvalid reports whether err (or any error it wraps) was marked with
// [Invalid].
func IsInvalid(err error) bool { return wraps[*invalidError](err) }

type invalidError struct{ err error }

func (e *invalidError) Error() string { return "invalid input: " + e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }
