package kafkatest

import (
	"log/slog"
	"os"
	"testing"
)

// EnvLog is the environment variable that turns on the logs of the
// clients under test ([Logger]): any value but empty.
const EnvLog = "SLUICE_TEST_LOG"

// Logger returns the logger a test gives the client under test (a
// source's or producer's Config.Logger): nil, which discards, unless the
// environment variable EnvLog is set; then a text logger to stderr at
// debug level whose every line names the test.
func Logger(t testing.TB) *slog.Logger {
	if os.Getenv(EnvLog) == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
}
