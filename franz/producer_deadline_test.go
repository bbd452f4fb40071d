package franz

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestDeadlinesBounds: every send gets a context ending between its
// delivery timeout and one deadlineStep later; sends of one window share
// it; the parent's end ends it.
func TestDeadlinesBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delivery = 800 * time.Millisecond
		step := deadlineStep(delivery) // 50ms
		if step != 50*time.Millisecond {
			t.Fatalf("deadlineStep(%v) = %v, want 50ms", delivery, step)
		}
		parent, cancel := context.WithCancel(context.Background())
		var d deadlines
		first := d.context(parent, delivery, time.Now())
		seen := map[context.Context]bool{first: true}
		for range 40 { // 40 sends 7ms apart: 280ms, 6 windows
			now := time.Now()
			ctx := d.context(parent, delivery, now)
			dl, ok := ctx.Deadline()
			if !ok {
				t.Fatal("context without a deadline")
			}
			if dl.Before(now.Add(delivery)) || dl.After(now.Add(delivery+step)) {
				t.Fatalf("send at %v: deadline %v is not within [%v, %v]", now, dl, now.Add(delivery), now.Add(delivery+step))
			}
			seen[ctx] = true
			time.Sleep(7 * time.Millisecond)
		}
		if n := len(seen); n < 5 || n > 7 {
			t.Errorf("%d contexts for 280ms of sends in windows of %v, want 5 to 7", n, step)
		}
		time.Sleep(delivery + step - 280*time.Millisecond + time.Millisecond) // first's deadline passed
		synctest.Wait()
		if first.Err() != context.DeadlineExceeded {
			t.Errorf("first context after its deadline: %v, want context.DeadlineExceeded", first.Err())
		}
		last := d.context(parent, delivery, time.Now())
		if last.Err() != nil {
			t.Fatalf("a new send's context already ended: %v", last.Err())
		}
		if n := len(d.open); n > int(delivery/step)+2 {
			t.Errorf("%d windows kept open, want the ones whose deadline is ahead (at most %d)", n, int(delivery/step)+2)
		}
		cancel()
		if last.Err() != context.Canceled {
			t.Errorf("after the parent's end: %v, want context.Canceled", last.Err())
		}
		time.Sleep(2 * delivery)
		d.context(context.Background(), delivery, time.Now())
		if n := len(d.open); n != 1 {
			t.Errorf("%d windows open long after their deadlines, want only the new one", n)
		}
	})
}

// TestDeadlineStep: a 16th of the delivery timeout, at most 100ms, never 0.
func TestDeadlineStep(t *testing.T) {
	for _, c := range []struct{ delivery, want time.Duration }{
		{DefaultDeliveryTimeout, maxDeadlineStep},
		{time.Second, 62500 * time.Microsecond},
		{time.Millisecond, 62500 * time.Nanosecond},
		{time.Nanosecond, time.Microsecond},
	} {
		if got := deadlineStep(c.delivery); got != c.want {
			t.Errorf("deadlineStep(%v) = %v, want %v", c.delivery, got, c.want)
		}
	}
}
