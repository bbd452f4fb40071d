package engine

import (
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how a stage retries a transient error: up to Attempts
// calls in all, waiting Initial before the first retry and doubling up to
// Max, each delay jittered to a random value between half and all of it.
// Zero fields take the defaults of the default policy (pipeline.DefaultRetry,
// Config.DefaultRetry); Attempts 1 disables retries.
type RetryPolicy struct {
	Attempts int
	Initial  time.Duration
	Max      time.Duration
}

// ResolveRetry checks p and returns it with its zero fields taken from
// def. The error says what is wrong with p, for the caller to wrap with
// the name of its option.
func ResolveRetry(p, def RetryPolicy) (RetryPolicy, error) {
	return p.withDefaults(def), p.check()
}

func (p RetryPolicy) withDefaults(def RetryPolicy) RetryPolicy {
	if p.Attempts == 0 {
		p.Attempts = def.Attempts
	}
	if p.Initial == 0 {
		p.Initial = def.Initial
	}
	if p.Max == 0 {
		p.Max = max(def.Max, p.Initial)
	}
	return p
}

func (p RetryPolicy) check() error {
	if p.Attempts < 0 || p.Initial < 0 || p.Max < 0 || (p.Max > 0 && p.Initial > p.Max) {
		return errors.New("attempts and delays must not be negative and Initial must not exceed Max")
	}
	return nil
}

// delay is the jittered wait before retry number attempt (from 1).
func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.Initial
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	return d/2 + rand.N(d/2+1)
}

// Permanent marks err as not worth retrying: the stage fails at once (Run
// stops). Errors marked with [Invalid] and panics are never retried either.
// Package pipeline exports it as pipeline.Permanent.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or any error it wraps) was marked with
// [Permanent].
func IsPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func retryable(err error) bool {
	var pe *PanicError
	return err != nil && !IsInvalid(err) && !IsPermanent(err) && !errors.As(err, &pe)
}

// sleep waits d. It returns false as soon as the partition starts
// draining or its context ends: a retry never holds up a revoke or a
// shutdown, and its value stays uncommitted.
func (g *graph) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.stop:
		return false
	case <-g.ctx.Done():
		return false
	}
}

// Retry decides what to do after the stage's call number attempt (from 1)
// failed with err: for a transient error within the stage's retry policy
// it waits the backoff delay and returns true (call again); otherwise, or
// when the partition starts being revoked meanwhile, it returns false and
// the stage passes err to Fail. Calls for different values may overlap.
func (s *Stage) Retry(err error, attempt int) bool {
	if !retryable(err) || attempt >= s.retry.Attempts {
		return false
	}
	d := s.retry.delay(attempt)
	s.g.rt.obs.StageRetry(s.name, s.g.tp, attempt, d, err)
	return s.g.sleep(d)
}
