package testkit_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/testkit"
)

// WaitCommitted returns once the partition is committed at the offset,
// and fails the test, naming where the partition stands, when the Fake
// stops below it or nothing moves until WaitTimeout.
func TestFakeWaitCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		r := testkit.Start(t, fake, discard)
		sendAndAssign(t, fake, 3)
		fake.WaitCommitted(t, "t", 0, 3)
		if got := fake.Committed("t", 0); got != 3 {
			t.Fatalf("committed %d after WaitCommitted(3), want 3", got)
		}
		if msg := runFailing(t, func(tb testing.TB) { fake.WaitCommitted(tb, "t", 0, 4) }); !strings.Contains(msg, "t/0 committed at 3 after 5m0s, waiting for 4") {
			t.Fatalf("WaitCommitted(4) with nothing more to commit failed with %q, want the timeout naming offset 3", msg)
		}
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
		if msg := runFailing(t, func(tb testing.TB) { fake.WaitCommitted(tb, "t", 0, 4) }); !strings.Contains(msg, "the fake source stopped while t/0 was committed at 3, waiting for 4") {
			t.Fatalf("WaitCommitted(4) after Run returned failed with %q, want it to say the source stopped", msg)
		}
	})
}

// Running.WaitCommitted returns once the commits read are exactly want,
// asking again while the read fails; it fails the test at once when a
// partition went past its wanted offset, and when Run returned below it.
func TestRunningWaitCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		r := testkit.Start(t, fake, discard)
		if err := fake.Assign("t", 0, 1); err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			if err := fake.Send("t", p, testkit.Values(3)...); err != nil {
				t.Fatal(err)
			}
		}
		reads := 0
		committed := func() (map[int32]int64, error) {
			if reads++; reads == 1 {
				return nil, errors.New("the broker is down")
			}
			c := map[int32]int64{}
			for p := range int32(2) {
				if n := fake.Committed("t", p); n > 0 {
					c[p] = n
				}
			}
			return c, nil
		}
		r.WaitCommitted(t, committed, map[int32]int64{0: 3, 1: 3})
		if reads < 2 {
			t.Fatalf("%d reads, want the failed one and more", reads)
		}
		if msg := runFailing(t, func(tb testing.TB) { r.WaitCommitted(tb, committed, map[int32]int64{0: 2, 1: 3}) }); !strings.Contains(msg, "partition 0 went past it") {
			t.Fatalf("WaitCommitted below the commits failed with %q, want it to name partition 0 past its offset", msg)
		}
		if msg := runFailing(t, func(tb testing.TB) { r.WaitCommitted(tb, committed, map[int32]int64{0: 3}) }); !strings.Contains(msg, "partition 1 went past it") {
			t.Fatalf("WaitCommitted without partition 1 failed with %q, want it to name partition 1", msg)
		}
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
		if msg := runFailing(t, func(tb testing.TB) { r.WaitCommitted(tb, committed, map[int32]int64{0: 4, 1: 3}) }); !strings.Contains(msg, "Run returned") {
			t.Fatalf("WaitCommitted after Run returned failed with %q, want it to say Run returned", msg)
		}
	})
}
