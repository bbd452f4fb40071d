package pgtest

import (
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	srv := shared.Get(t)
	if got := srv.LogTail(1000); !strings.Contains(got, "database system is ready to accept connections") {
		t.Fatalf("LogTail(1000) = %q, want the server's start", got)
	}
	if got := srv.LogTail(1); strings.Contains(got, "\n") || got == "" {
		t.Fatalf("LogTail(1) = %q, want one line", got)
	}
}
