package testkit_test

import (
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
		if err := fake.Send("t", 0, values(3)...); err != nil {
			t.Fatal(err)
		}
		if err := fake.Assign("t", 0); err != nil {
			t.Fatal(err)
		}
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
