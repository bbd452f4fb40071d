package testkit

import (
	"testing"
	"time"
)

// WaitCommitted blocks until the partition's committed offset is at least
// offset, without polling. It fails the test if the Fake's Run returns
// first with the partition committed below offset, or after WaitTimeout
// (inside a synctest bubble, where the clock is fake, only on a deadlock).
func (f *Fake) WaitCommitted(t testing.TB, topic string, partition int32, offset int64) {
	t.Helper()
	f.waitCommitted(t, topic, partition, offset, WaitTimeout, f.stopped, func() string { return "the fake source stopped" })
}

// waitCommitted is WaitCommitted with its timeout and the channel whose
// closing ends the wait; stopped says why, for the failure message.
func (f *Fake) waitCommitted(t testing.TB, topic string, partition int32, offset int64, timeout time.Duration, done <-chan struct{}, stopped func() string) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		changed := f.Changed()
		c := f.Committed(topic, partition)
		if c >= offset {
			return
		}
		select {
		case <-changed:
		case <-done:
			if c = f.Committed(topic, partition); c >= offset {
				return
			}
			t.Fatalf("testkit: %s while %s/%d was committed at %d, waiting for %d", stopped(), topic, partition, c, offset)
		case <-timer.C:
			t.Fatalf("testkit: %s/%d committed at %d after %v, waiting for %d: is the graph stuck?", topic, partition, c, timeout, offset)
		}
	}
}
