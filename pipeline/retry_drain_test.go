package pipeline_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

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
		t.Fatalf("warnings %+v, want one naming retry_backoff=24m3s and drain_timeout=20s", logs.lines)
	}

	logs = &logLines{level: slog.LevelWarn}
	if err := runWith(pipeline.WithLogger(slog.New(logs))); err != nil {
		t.Fatal(err)
	}
	if len(logs.lines) != 0 {
		t.Fatalf("warnings %+v with the default policy, want none", logs.lines)
	}
}
