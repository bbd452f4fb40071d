package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readmeBlock returns the first Go code block of the README's section
// "A typical consumer".
func readmeBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	_, section, ok := strings.Cut(s, "\n## A typical consumer\n")
	if !ok {
		t.Fatal(`README.md has no section "A typical consumer"`)
	}
	_, code, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal(`the section "A typical consumer" has no Go code block`)
	}
	code, _, ok = strings.Cut(code, "```\n")
	if !ok {
		t.Fatal("the Go code block of \"A typical consumer\" does not end")
	}
	return code
}

// The README's consumer is this package's code between the markers, so it
// compiles (go build ./... builds it) and is checked here.
func TestREADMEConsumerIsThisCode(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, mine, _ := strings.Cut(string(src), "// BEGIN README\n")
	mine, _, _ = strings.Cut(mine, "// END README")
	if got, want := strings.TrimSpace(mine), strings.TrimSpace(readmeBlock(t)); got != want {
		t.Fatalf("internal/readme/main.go differs from the README's code block; copy the README's block between the markers.\nREADME:\n%s\nmain.go:\n%s", want, got)
	}
}

// What a copied main must do: stop on SIGTERM too (Kubernetes sends it;
// without a handler the process dies without draining or committing),
// log (the retry warnings are how misuse shows), exit non-zero when Run
// failed, and close the producer after Run.
func TestREADMEConsumerStopsOnSIGTERMLogsAndExitsNonZero(t *testing.T) {
	code := readmeBlock(t)
	for _, want := range []string{
		"signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)",
		"pipeline.WithLogger(logger)",
		"Logger: logger})",
		"os.Exit(1)",
		"errors.Join(err, dlq.Close())",
		"pipeline.WithDeadLetter(dlq.DeadLetter(\"orders-dlq\"))",
	} {
		if !strings.Contains(code, want) {
			t.Errorf("the README's consumer lacks %q", want)
		}
	}
	if strings.Contains(code, "log.Print") || strings.Contains(code, "log.Fatal") {
		t.Error("the README's consumer uses package log: a log.Print of Run's error exits 0")
	}
}

// The README's graph works: valid orders are charged and committed, a
// malformed one is dead-lettered.
func TestREADMEGraphDeadLettersBadOrders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := testkit.NewDeadLetters()
		h := testkit.New(t, build, dead.Option())
		h.Assign("orders", 0)
		h.Send("orders", 0, []byte(`{"ID":"1","Customer":"a"}`), []byte(`not json`), []byte(`{"ID":"3","Customer":"b"}`))
		h.WaitCommitted("orders", 0, 3)
		if got := dead.Offsets("orders", 0); !slices.Equal(got, []int64{1}) {
			t.Fatalf("dead-lettered offsets %v, want [1]", got)
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
	})
}
