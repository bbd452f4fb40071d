package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestMain lets the test binary be the benchmark's child processes: the
// parent (bench, run by TestSmoke) re-executes os.Executable() with
// childEnv set and the child mode's arguments.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(childMain(os.Args[1:]))
	}
	goleak.VerifyTestMain(kafkatest.Pooled(m))
}
