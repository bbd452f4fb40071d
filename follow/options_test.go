package follow_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/testkit"
)

// Bad arguments are errors that name them.
func TestNewErrors(t *testing.T) {
	fake, leaders := testkit.NewFake(), newStubLeaders()
	for _, tc := range []struct {
		name    string
		inner   sluice.Source
		leaders follow.Leaders
		opts    []follow.Option
		want    string
	}{
		{"nil inner", nil, leaders, nil, "nil inner source"},
		{"nil leaders", fake, nil, nil, "nil Leaders"},
		{"zero interval", fake, leaders, []follow.Option{follow.WithInterval(0)}, "WithInterval(0s)"},
		{"sub-ms timeout", fake, leaders, []follow.Option{follow.WithRequestTimeout(10)}, "WithRequestTimeout(10ns)"},
		{"nil logger", fake, leaders, []follow.Option{follow.WithLogger(nil)}, "WithLogger(nil)"},
		{"nil hook", fake, leaders, []follow.Option{follow.WithHook(nil)}, "WithHook(nil)"},
		{"nil option", fake, leaders, []follow.Option{nil}, "option 0 is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := follow.New(tc.inner, tc.leaders, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, %v; want an error containing %q", src, err, tc.want)
			}
		})
	}
}

// Run refuses a second call.
func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFollower(t, testkit.NewFake(), newStubLeaders())
		run := testkit.Start(t, src, newRecorder(newStubLeaders()).build)
		synctest.Wait()
		if err := src.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "called twice") {
			t.Fatalf("second Run: %v, want an error saying it was called twice", err)
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
	})
}

// One read per interval covers every owned partition; none is made while
// nothing is owned; an assignment reads at once.
func TestOneReadPerIntervalForAllPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		run := testkit.Start(t, newFollower(t, fake, leaders), newRecorder(leaders).build)
		settle()
		settle()
		if leaders.calls != 0 {
			t.Fatalf("%d reads with nothing owned, want 0", leaders.calls)
		}
		if err := fake.Assign("orders", 0, 1, 2); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the read the assignment asks for
		leaders.mu.Lock()
		calls, asked := leaders.calls, leaders.asked
		leaders.mu.Unlock()
		if calls != 1 || len(asked[0]) != 3 {
			t.Fatalf("after Assign: %d reads, first for %v; want one read for the 3 partitions", calls, asked)
		}
		settle()
		settle()
		leaders.mu.Lock()
		calls = leaders.calls
		leaders.mu.Unlock()
		if calls != 3 {
			t.Fatalf("two intervals later: %d reads, want 3", calls)
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
	})
}

// Hooks get each partition's status on change: assigned, leaders read,
// records held, released, and gone.
func TestHookStatuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startRig(t, map[int32]int64{0: 2})
		if err := r.fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		settle()
		if err := r.fake.Send("orders", 0, values(5)...); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		r.leaders.set("orders", 0, 5)
		settle()
		if err := r.fake.Revoke("orders", 0); err != nil {
			t.Fatal(err)
		}
		r.stop(t)
		o := tp("orders", 0)
		want := []follow.Status{
			{TopicPartition: o, Leaders: -1, Lag: -1, Owned: true},
			{TopicPartition: o, Leaders: 2, Lag: -1, Owned: true},         // nothing received yet
			{TopicPartition: o, Leaders: 2, Held: 3, Lag: 0, Owned: true}, // 0, 1 handed on, 2..4 held
			{TopicPartition: o, Leaders: 5, Held: 3, Lag: 3, Owned: true}, // the read applied, 2..4 not yet released
			{TopicPartition: o, Leaders: 5, Held: 0, Lag: 0, Owned: true}, // released
			{TopicPartition: o, Leaders: 5, Lag: -1, Owned: false},
		}
		got := r.hooks.list()
		if len(got) != len(want) {
			t.Fatalf("statuses\n got %+v\nwant %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("status %d: got %+v, want %+v (all: %+v)", i, got[i], want[i], got)
			}
		}
	})
}

// The first failed read is a warning, the next ones debug, and a read that
// works again is logged once.
func TestFailedReadsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecorder{}
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		leaders.fail(context.DeadlineExceeded)
		run := testkit.Start(t, newFollower(t, fake, leaders, follow.WithLogger(slog.New(logs))), newRecorder(leaders).build)
		if err := fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		settle()
		settle()
		leaders.fail(nil)
		settle()
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		got := logs.levels()
		want := []slog.Level{slog.LevelWarn, slog.LevelDebug, slog.LevelDebug, slog.LevelInfo}
		if len(got) != len(want) {
			t.Fatalf("log levels %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("log levels %v, want %v", got, want)
			}
		}
	})
}
