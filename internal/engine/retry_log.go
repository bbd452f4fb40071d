package engine

import (
	"sync"
	"time"
)

// Retry warnings are rate-limited per stage and partition (and per
// partition for dead-letter deliveries): a burst of retryLogBurst lines,
// then one per retryLogEvery. That logs every retry of one failing value
// under the default policy (7 retries), while a stage retrying many
// values at once (a Pool during a database outage) does not flood the log;
// the next line logged says how many were left out.
const (
	retryLogBurst = 10
	retryLogEvery = time.Second
)

// retryLog is the rate limit of one stage's retry warnings: a token
// bucket kept as a debt of time (each warning costs retryLogEvery, paid
// back as time passes), so that it is exact. The zero value is full. Safe
// for concurrent use.
type retryLog struct {
	mu      sync.Mutex
	debt    time.Duration // at most retryLogBurst * retryLogEvery
	last    time.Time     // when debt was last paid down
	dropped int           // warnings left out since the last one logged
}

// allow reports whether a warning may be logged at now and, if so, how
// many were left out before it.
func (l *retryLog) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.debt = max(0, l.debt-now.Sub(l.last))
	}
	l.last = now
	if l.debt+retryLogEvery > retryLogBurst*retryLogEvery {
		l.dropped++
		return false, 0
	}
	l.debt += retryLogEvery
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}
