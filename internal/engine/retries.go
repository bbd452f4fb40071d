package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-go/sluice"
)

// ResolveRetry checks p and returns it with its zero fields taken from
// def. The error says which field is wrong, for the caller to wrap with
// the name of its option.
func ResolveRetry(p, def RetryPolicy) (RetryPolicy, error) {
	return withDefaults(p, def), checkRetry(p)
}

// withDefaults returns p with its zero fields taken from def.
func withDefaults(p, def RetryPolicy) RetryPolicy {
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

// checkRetry returns an error naming each field of p that is out of
// range.
func checkRetry(p RetryPolicy) error {
	var errs []error
	if p.Attempts < 0 {
		errs = append(errs, fmt.Errorf("RetryPolicy.Attempts %d must not be negative (1 disables retries, 0 takes the default)", p.Attempts))
	}
	if p.Initial < 0 {
		errs = append(errs, fmt.Errorf("RetryPolicy.Initial %v must not be negative", p.Initial))
	}
	if p.Max < 0 {
		errs = append(errs, fmt.Errorf("RetryPolicy.Max %v must not be negative", p.Max))
	}
	if p.Max > 0 && p.Initial > p.Max {
		errs = append(errs, fmt.Errorf("RetryPolicy.Initial %v must not exceed Max %v", p.Initial, p.Max))
	}
	return errors.Join(errs...)
}

// delay is the jittered wait before retry number attempt (from 1): a
// random value between half and all of the backoff.
func delay(p RetryPolicy, attempt int) time.Duration {
	d := p.Backoff(attempt)
	return d/2 + rand.N(d/2+1)
}

// retryable reports whether err is worth another call: not marked with
// sluice.Invalid or sluice.Permanent, and not a panic.
func retryable(err error) bool {
	var pe *PanicError
	return err != nil && !sluice.IsInvalid(err) && !sluice.IsPermanent(err) && !errors.As(err, &pe)
}

// exhaustedError is a transient error that failed every attempt of its
// retry policy. It wraps the last error and has its text, followed by the
// number of attempts and, for stage functions, what to do instead.
type exhaustedError struct {
	err      error
	attempts int
	hint     string
}

func (e *exhaustedError) Error() string {
	n := "attempts"
	if e.attempts == 1 {
		n = "attempt (retries disabled)"
	}
	return fmt.Sprintf("%v (failed after %d %s%s)", e.err, e.attempts, n, e.hint)
}

func (e *exhaustedError) Unwrap() error { return e.err }

// stageRetryHint is what the final error and the retry log lines of a
// stage function suggest.
const stageRetryHint = "; for input that can never succeed return sluice.Invalid(err) " +
	"to dead-letter the record, or sluice.Permanent(err) to stop without retrying"

// retrier is the one retry loop of the engine, shared by stage functions
// ([Stage.Retry], which stagekit.Call uses) and dead-letter deliveries.
type retrier struct {
	g      *graph
	policy RetryPolicy
	stage  string    // as in logs and hook events
	hint   string    // appended to the final error and the warnings
	log    *retryLog // rate limit of the warnings
}

// after decides what happens after call number attempt (from 1), for the
// record at offset off (-1 when unknown), failed with err. For a transient
// error within the policy it logs a warning (the stage, the partition, the
// offset, attempt n of N, the delay and err; rate-limited, see
// retry_log.go), reports the retry to hooks, waits the jittered backoff and returns true: call again. It
// returns false with the error to report when err is not worth retrying
// (Invalid, Permanent, a panic), when the attempts are used up (err is
// then wrapped: its text names the number of attempts and the hint), or
// when the partition starts draining or its context ends during the wait:
// a retry never holds up a revoke or a shutdown, and the value stays
// uncommitted.
func (r retrier) after(off int64, err error, attempt int) (bool, error) {
	if !retryable(err) {
		return false, err
	}
	if attempt >= r.policy.Attempts {
		return false, &exhaustedError{err: err, attempts: r.policy.Attempts, hint: r.hint}
	}
	d := delay(r.policy, attempt)
	g := r.g
	if ok, dropped := r.log.allow(time.Now()); ok {
		attrs := []any{"stage", r.stage, "topic", g.tp.Topic, "partition", g.tp.Partition, "offset", off,
			"attempt", fmt.Sprintf("%d/%d", attempt, r.policy.Attempts), "delay", d.String(), "err", err}
		if dropped > 0 {
			attrs = append(attrs, "unlogged_retries", dropped)
		}
		g.rt.cfg.Logger.Warn("sluice: call failed, retrying"+r.hint, attrs...)
	}
	g.rt.hooks.StageRetry(r.stage, g.tp, attempt, d, err)
	if !g.sleep(d) {
		return false, err
	}
	return true, nil
}

// sleep waits d. It returns false as soon as the partition starts
// draining or its context ends.
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

// Retry decides what happens after the stage's call number attempt (from
// 1) for the value holding ticket t failed with err; it is the one retry
// loop every stage function goes through (stagekit.Call calls it):
//
//	for attempt := 1; ; attempt++ {
//		err := call()
//		if err == nil { ... }
//		again, err := s.Retry(t, err, attempt)
//		if !again { return s.Fail(t, err) }
//	}
//
// For a transient error within the stage's retry policy it logs a warning
// naming the stage, the partition, the value's first offset, "attempt n/N",
// the delay and err (a burst of 10 per stage and partition, then one a
// second; the next line logged counts those left out as
// unlogged_retries), waits the jittered backoff and returns true: call
// again. Otherwise it returns false and the error for [Stage.Fail]: err
// itself when it is Invalid, Permanent or a panic, or when the partition
// started draining or its context ended (a retry never holds up a revoke
// or a shutdown); once the attempts are used up, err wrapped so that its
// text ends with "(failed after N attempts; ...)" and suggests
// sluice.Invalid and sluice.Permanent (errors.Is and errors.As still
// see err). Calls for different values may overlap, from any goroutine
// of the stage.
func (s *Stage) Retry(t Ticket, err error, attempt int) (again bool, final error) {
	off := int64(-1)
	if retryable(err) && attempt < s.retry.Attempts {
		s.g.tr.withFirstRecord(t, func(r *Record) { off = r.Offset })
	}
	return retrier{g: s.g, policy: s.retry, stage: s.name, hint: stageRetryHint, log: &s.retryLog}.after(off, err, attempt)
}
