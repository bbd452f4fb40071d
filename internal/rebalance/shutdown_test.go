package rebalance

import (
	"log/slog"
	"testing"
	"testing/synctest"
)

// A final commit the coordinator still answers with REBALANCE_IN_PROGRESS
// when its share of CloseTimeout runs out was refused because the group
// is moving on, as an ILLEGAL_GENERATION is: no record is at risk (the
// next owner starts from the previous commit), so Run returns nil and
// logs a warning saying so, for either refusal.
func TestFinalCommitRefusedByTheGroupIsAWarningNotAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"rebalancing until the deadline", errRebalancing}, {"moved on", errMovedOn}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logs := newLogRecorder()
				h := startLogged(t, slog.New(logs))
				h.assign(tp0)
				h.setFinal(off(tp0, 9))
				stopped := h.stopAsync()
				for {
					select {
					case err := <-stopped:
						if err != nil {
							t.Fatalf("Run = %v, want nil (the group refused the commit: duplicates, no loss)", err)
						}
						if !logs.logged(slog.LevelWarn, FinalCommitRefused) {
							t.Fatalf("logs %q, want a warning %q", logs.all(), FinalCommitRefused)
						}
						return
					case c := <-h.b.commits:
						wantOffsets(t, "final commit", c.offs, off(tp0, 9))
						c.answer <- commitAnswer{err: tc.err}
					}
				}
			})
		})
	}
}
