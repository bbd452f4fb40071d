package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

var errFlaky = errors.New("connection refused")

func TestTransientErrorsAreRetriedWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := eachHarness(t, func(_ context.Context, r sluice.Record) error {
			if a.call(r.Offset) <= 3 && r.Offset == 1 {
				return errFlaky
			}
			return nil
		}, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 5, Initial: time.Second, Max: 3 * time.Second}))
		assignAndSend(h, 3)
		h.WaitCommitted("t", 0, 3)
		calls := a.of(1)
		if len(calls) != 4 {
			t.Fatalf("offset 1 was called %d times, want 4 (3 failures, 1 success)", len(calls))
		}
		// Delays double from 1s and are capped at 3s, each jittered into
		// [d/2, d].
		for i, bound := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
			if d := calls[i+1].Sub(calls[i]); d < bound/2 || d > bound {
				t.Errorf("retry %d came after %v, want within [%v, %v]", i+1, d, bound/2, bound)
			}
		}
	})
}

func TestExhaustedRetriesStopRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				a.call(r.Offset)
				if r.Offset == 2 {
					return errFlaky
				}
				return nil
			}, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: time.Millisecond}))
		})
		assignAndSend(h, 5)
		if err := h.Wait(); !errors.Is(err, errFlaky) {
			t.Fatalf("Run returned %v, want %v", err, errFlaky)
		}
		if n := len(a.of(2)); n != 3 {
			t.Fatalf("offset 2 called %d times, want 3 (the stage's own policy)", n)
		}
		checkCommitted(t, h, 2, "")
	})
}

func TestPermanentInvalidAndPanicsAreNotRetried(t *testing.T) {
	cases := map[string]error{
		"permanent": sluice.Permanent(errors.New("schema mismatch")),
		"invalid":   sluice.Invalid(errors.New("bad json")),
	}
	for name, failure := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a attempts
				h := eachHarness(t, func(_ context.Context, r sluice.Record) error {
					a.call(r.Offset)
					return failure
				})
				assignAndSend(h, 1)
				if err := h.Wait(); err == nil {
					t.Fatal("Run did not stop")
				}
				if n := len(a.of(0)); n != 1 {
					t.Fatalf("called %d times, want 1", n)
				}
			})
		})
	}
}

func TestRevokeInterruptsARetryAndLeavesTheRecordUncommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := eachHarness(t, func(_ context.Context, r sluice.Record) error {
			a.call(r.Offset)
			if r.Partition == 0 && r.Offset == 1 {
				return errFlaky // the database stays down
			}
			return nil
		}, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 100, Initial: time.Minute, Max: time.Hour}))
		h.Assign("t", 0, 1)
		h.Send("t", 0, testkit.Values(3)...)
		synctest.Wait() // offset 1 waits in its first backoff
		h.Send("t", 1, testkit.Values(4)...)
		h.WaitCommitted("t", 1, 4) // other partitions go on meanwhile
		start := time.Now()
		h.Revoke("t", 0)
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("revoke waited %v for a backoff; it must interrupt it", waited)
		}
		checkCommitted(t, h, 1, "(offset 1 never succeeded)")
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop: %v (an interrupted retry must not stop Run)", err)
		}
	})
}

func TestDeadLetterDeliveryIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse))
		}, pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
			if a.call(dl.Record.Offset) == 1 {
				return errFlaky
			}
			return nil
		}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("x"), []byte("2"))
		h.WaitCommitted("t", 0, 3)
		if n := len(a.of(1)); n != 2 {
			t.Fatalf("dead letter attempted %d times, want 2", n)
		}
	})
}

// stuckRecorder records Stuck events.
type stuckRecorder struct{ lockedList[string] }

func (s *stuckRecorder) OnStuck(stage string, tp sluice.TopicPartition, offset int64, since time.Duration) {
	s.push(fmt.Sprintf("%s@%s/%d:%d", stage, tp.Topic, tp.Partition, offset))
}

func TestStuckDetectorReportsAValueOnceWithItsPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(3)
		obs := &stuckRecorder{}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			slow := stages.Pool(in, 2, func(ctx context.Context, r sluice.Record) (int64, error) {
				return r.Offset, g.wait(ctx, r.Offset)
			}, stages.Name("enrich"))
			return stages.Discard(slow)
		}, pipeline.WithStuckThreshold(10*time.Second), pipeline.WithHooks(obs))
		assignAndSend(h, 6)
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if ev := obs.list(); len(ev) != 0 {
			t.Fatalf("reported %v before the threshold", ev)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if ev := obs.list(); len(ev) != 1 || ev[0] != "enrich@t/0:3" {
			t.Fatalf("stuck events %v, want exactly [enrich@t/0:3]", ev)
		}
		g.open(3)
		h.WaitCommitted("t", 0, 6)
	})
}

// The documented sums of the default policy are the policy's: 11.3 s of
// backoff at most, half of it at least, both below the drain timeout.
func TestDefaultRetryBackoffIsTheDocumentedSum(t *testing.T) {
	p := sluice.DefaultRetry()
	if want := (sluice.RetryPolicy{Attempts: 8, Initial: 100 * time.Millisecond, Max: 5 * time.Second}); p != want {
		t.Fatalf("DefaultRetry() = %+v, want %+v (the documented policy)", p, want)
	}
	const documented = 11300 * time.Millisecond // 0.1+0.2+0.4+0.8+1.6+3.2+5
	if got := p.MaxBackoff(); got != documented {
		t.Fatalf("DefaultRetry().MaxBackoff() = %v, want the documented %v", got, documented)
	}
	if p.MaxBackoff() >= pipeline.DefaultDrainTimeout {
		t.Fatalf("the default backoff %v is not shorter than the default drain timeout %v", p.MaxBackoff(), pipeline.DefaultDrainTimeout)
	}
	p.Attempts = 1
	if sluice.DefaultRetry().Attempts != 8 {
		t.Fatal("changing the returned policy changed the default")
	}
}

// A decoder that forgets sluice.Invalid: every retry is a warning naming
// the stage, the record and the attempt, and the error that stops Run says
// how many attempts failed and what to return instead.
func TestExhaustedRetriesAreLoggedAndSuggestInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logLines{level: slog.LevelWarn}
		var a attempts
		errBadJSON := errors.New("bad json")
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			decoded := stages.Map(in, func(_ context.Context, r sluice.Record) (int64, error) {
				a.call(r.Offset)
				if r.Offset == 1 {
					return 0, errBadJSON
				}
				return r.Offset, nil
			}, stages.Name("decode"))
			return stages.Discard(decoded)
		}, pipeline.WithLogger(slog.New(logs)))
		assignAndSend(h, 3)
		err := h.Wait()
		want := `sluice: stage "decode" on t/0 at offset 1: bad json (failed after 8 attempts; ` +
			`for input that can never succeed return sluice.Invalid(err) to dead-letter the record, ` +
			`or sluice.Permanent(err) to stop without retrying)`
		if err == nil || err.Error() != want {
			t.Fatalf("Run returned\n%v\nwant\n%s", err, want)
		}
		if !errors.Is(err, errBadJSON) {
			t.Fatalf("Run's error %v does not wrap the stage's error", err)
		}
		calls := a.of(1)
		if len(calls) != 8 {
			t.Fatalf("offset 1 was called %d times, want 8 (the default policy)", len(calls))
		}
		if waited := calls[7].Sub(calls[0]); waited < 5650*time.Millisecond || waited > 11300*time.Millisecond {
			t.Fatalf("the retries took %v, want within [5.65s, 11.3s] (the documented jittered sum)", waited)
		}

		lines := logs.withMessage("sluice: call failed, retrying")
		if len(lines) != 7 {
			t.Fatalf("%d retry warnings, want 7 (one per retry): %+v", len(lines), lines)
		}
		const msg = "sluice: call failed, retrying; for input that can never succeed return sluice.Invalid(err) " +
			"to dead-letter the record, or sluice.Permanent(err) to stop without retrying"
		backoff := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000}
		for i, line := range lines {
			if line.msg != msg {
				t.Errorf("warning %d says %q, want %q", i+1, line.msg, msg)
			}
			d, perr := time.ParseDuration(line.attrs["delay"])
			bound := backoff[i] * time.Millisecond
			if perr != nil || d < bound/2 || d > bound {
				t.Errorf("warning %d: delay %q, want within [%v, %v]", i+1, line.attrs["delay"], bound/2, bound)
			}
			delete(line.attrs, "delay")
			wantAttrs := fmt.Sprintf("map[attempt:%d/8 err:bad json offset:1 partition:0 stage:decode topic:t]", i+1)
			if got := fmt.Sprint(line.attrs); got != wantAttrs {
				t.Errorf("warning %d has %s, want %s", i+1, got, wantAttrs)
			}
		}
	})
}

func TestRetriesDisabledSayOneAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(context.Context, sluice.Record) error { return errFlaky }, stages.Name("write"))
		}, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 1}))
		assignAndSend(h, 1)
		want := `sluice: stage "write" on t/0 at offset 0: connection refused (failed after 1 attempt (retries disabled); ` +
			`for input that can never succeed return sluice.Invalid(err) to dead-letter the record, ` +
			`or sluice.Permanent(err) to stop without retrying)`
		if err := h.Wait(); err == nil || err.Error() != want {
			t.Fatalf("Run returned\n%v\nwant\n%s", err, want)
		}
	})
}

// A Permanent error is reported as it is: no attempts, no hint.
func TestPermanentErrorTextIsUnchanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logLines{level: slog.LevelWarn}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(context.Context, sluice.Record) error {
				return sluice.Permanent(errors.New("schema mismatch"))
			}, stages.Name("write"))
		}, pipeline.WithLogger(slog.New(logs)))
		assignAndSend(h, 1)
		want := `sluice: stage "write" on t/0 at offset 0: schema mismatch`
		if err := h.Wait(); err == nil || err.Error() != want {
			t.Fatalf("Run returned %v, want %s", err, want)
		}
		if lines := logs.withMessage("sluice: call failed, retrying"); len(lines) != 0 {
			t.Fatalf("a permanent error logged retries: %+v", lines)
		}
	})
}

// Dead-letter deliveries go through the same retry loop: a warning per
// retry, naming the record, and the attempts in the final error.
func TestDeadLetterRetriesAreLoggedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logLines{level: slog.LevelWarn}
		errDLQ := errors.New("dlq unavailable")
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse, stages.Name("parse")))
		}, pipeline.WithLogger(slog.New(logs)),
			pipeline.WithRetry(sluice.RetryPolicy{Attempts: 3, Initial: time.Second}),
			pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return errDLQ }))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("x"))
		err := h.Wait()
		want := `sluice: stage "parse" on t/0 at offset 1: records not dead-lettered: dead-letter delivery failed: ` +
			`dlq unavailable (failed after 3 attempts) (record was invalid: invalid input: not a number: "x")`
		if err == nil || err.Error() != want {
			t.Fatalf("Run returned\n%v\nwant\n%s", err, want)
		}
		lines := logs.withMessage("sluice: call failed, retrying")
		if len(lines) != 2 {
			t.Fatalf("%d retry warnings, want 2: %+v", len(lines), lines)
		}
		for i, line := range lines {
			if line.msg != "sluice: call failed, retrying" {
				t.Errorf("warning %d says %q, want no Invalid hint for a dead-letter delivery", i+1, line.msg)
			}
			delete(line.attrs, "delay")
			wantAttrs := fmt.Sprintf("map[attempt:%d/3 err:dlq unavailable offset:1 partition:0 stage:parse (dead letter) topic:t]", i+1)
			if got := fmt.Sprint(line.attrs); got != wantAttrs {
				t.Errorf("warning %d has %s, want %s", i+1, got, wantAttrs)
			}
		}
	})
}

func TestInvalidRetryPoliciesNameTheField(t *testing.T) {
	cases := []struct {
		p    sluice.RetryPolicy
		want string
	}{
		{sluice.RetryPolicy{Attempts: -1}, "sluice: WithRetry({Attempts:-1 Initial:0s Max:0s}): RetryPolicy.Attempts -1 must not be negative (1 disables retries, 0 takes the default)"},
		{sluice.RetryPolicy{Initial: -time.Second}, "sluice: WithRetry({Attempts:0 Initial:-1s Max:0s}): RetryPolicy.Initial -1s must not be negative"},
		{sluice.RetryPolicy{Max: -time.Second}, "sluice: WithRetry({Attempts:0 Initial:0s Max:-1s}): RetryPolicy.Max -1s must not be negative"},
		{sluice.RetryPolicy{Initial: 2 * time.Second, Max: time.Second}, "sluice: WithRetry({Attempts:0 Initial:2s Max:1s}): RetryPolicy.Initial 2s must not exceed Max 1s"},
	}
	for _, c := range cases {
		err := pipeline.Run(context.Background(), testkit.NewFake(), func(*pipeline.Partition, pipeline.Stream[sluice.Record]) pipeline.End {
			panic("not built")
		}, pipeline.WithRetry(c.p))
		if err == nil || err.Error() != c.want {
			t.Errorf("WithRetry(%+v): Run returned %v, want %s", c.p, err, c.want)
		}
	}
}

// A retry policy whose backoff adds up to more than the drain timeout is
// accepted with one warning at start naming both values; the default
// policy, below it, gets none.
func TestRetryLongerThanTheDrainTimeoutIsAWarningNamingBoth(t *testing.T) {
	long := sluice.RetryPolicy{Attempts: 30, Initial: time.Second, Max: time.Minute} // 1+2+4+8+16+32 s, then 23 minutes
	if got := long.MaxBackoff(); got != 24*time.Minute+3*time.Second {
		t.Fatalf("MaxBackoff = %v", got)
	}
	logs := &logLines{level: slog.LevelWarn}
	if err := runWith(pipeline.WithRetry(long), pipeline.WithLogger(slog.New(logs))); err != nil {
		t.Fatal(err)
	}
	lines := logs.withMessage("sluice: the retry policy")
	if len(lines) != 1 || lines[0].attrs["retry_backoff"] != "24m3s" || lines[0].attrs["drain_timeout"] != "20s" {
		t.Fatalf("warnings %+v, want one naming retry_backoff=24m3s and drain_timeout=20s", logs.list())
	}

	logs = &logLines{level: slog.LevelWarn}
	if err := runWith(pipeline.WithLogger(slog.New(logs))); err != nil {
		t.Fatal(err)
	}
	if len(logs.list()) != 0 {
		t.Fatalf("warnings %+v with the default policy, want none", logs.list())
	}
}
