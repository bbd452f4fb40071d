//go:build linux

package kafkatest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalTB records the message of a Fatalf and ends its goroutine there, as
// t.Fatalf does, so that a test can check how a helper fails.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// WaitCommitted returns once the group's commits equal want, and fails at
// once, without waiting out its timeout, when a partition was committed
// past the offset it waits for.
func TestWaitCommitted(t *testing.T) {
	b := NewBroker(t, WithTopic("w", 2))
	b.Fill(t, "w", 3, 1)
	b.Commit(t, "g", "w", map[int32]int64{0: 2, 1: 1})
	b.WaitCommitted(t, "g", "w", map[int32]int64{0: 2, 1: 1})

	tb := &fatalTB{TB: t}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.WaitCommitted(tb, "g", "w", map[int32]int64{0: 1, 1: 1})
	}()
	<-done
	if !strings.Contains(tb.msg, "partition 0 went past it") {
		t.Errorf("WaitCommitted of an offset below the commit failed with %q, want it to name partition 0 as past it", tb.msg)
	}
	if took := time.Since(start); took >= WaitCommittedTimeout {
		t.Errorf("WaitCommitted of an offset below the commit failed after %v, want at once", took)
	}
}
