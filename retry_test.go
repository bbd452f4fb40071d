package sluice

import (
	"errors"
	"testing"
	"time"
)

func TestMaxBackoffSumsTheCappedDelays(t *testing.T) {
	cases := []struct {
		p    RetryPolicy
		want time.Duration
	}{
		{RetryPolicy{Attempts: 1, Initial: time.Second, Max: time.Second}, 0},
		{RetryPolicy{Attempts: 2, Initial: time.Second, Max: time.Second}, time.Second},
		{RetryPolicy{Attempts: 5, Initial: time.Second, Max: 3 * time.Second}, (1 + 2 + 3 + 3) * time.Second},
		{RetryPolicy{Attempts: 4, Initial: 10 * time.Millisecond, Max: time.Minute}, 70 * time.Millisecond},
	}
	for _, c := range cases {
		if got := c.p.MaxBackoff(); got != c.want {
			t.Errorf("%+v.MaxBackoff() = %v, want %v", c.p, got, c.want)
		}
	}
}

// Backoff doubles from Initial up to Max; MaxBackoff is the sum of the
// backoffs before every retry.
func TestBackoffDoublesUpToMax(t *testing.T) {
	p := RetryPolicy{Attempts: 6, Initial: time.Second, Max: 5 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	var sum time.Duration
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
		sum += w
	}
	if got := p.MaxBackoff(); got != sum {
		t.Errorf("MaxBackoff() = %v, want %v", got, sum)
	}
}

// Invalid and Permanent of nil are nil; their marks wrap the error, and
// only Invalid's changes its text.
func TestMarks(t *testing.T) {
	if Invalid(nil) != nil || Permanent(nil) != nil {
		t.Fatal("Invalid(nil) or Permanent(nil) is not nil")
	}
	base := errors.New("bad")
	inv, perm := Invalid(base), Permanent(base)
	if !errors.Is(inv, base) || !errors.Is(perm, base) {
		t.Errorf("the marks do not wrap the error: %v, %v", inv, perm)
	}
	if inv.Error() != "invalid input: bad" || perm.Error() != "bad" {
		t.Errorf("texts %q and %q, want %q and %q", inv.Error(), perm.Error(), "invalid input: bad", "bad")
	}
	if !IsInvalid(inv) || IsInvalid(perm) || !IsPermanent(perm) || IsPermanent(inv) {
		t.Error("IsInvalid or IsPermanent confuses the marks")
	}
}
