package main

import (
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// abortLine is what cmd/example logs when Run stops with ErrAborted.
const abortLine = `level=ERROR msg="exactly-once transaction aborted; the consumer stops" err="` +
	`sluice: the exactly-once transaction was aborted: interval commit: committing the transaction with offsets [{{events 5} 165} {{events 6} 165}]: ` +
	`sending the offsets to the transaction: Broker: Specified group generation id is not valid"`

// shSupervisor is the tests' one supervisor of /bin/sh processes (each
// supervisor keeps an OS thread for good).
var shSupervisor = sync.OnceValue(func() *supervisor { return newSupervisor("/bin/sh") })

// shProc runs script under /bin/sh as a supervised process of slot 0
// and waits for it to exit.
func shProc(t *testing.T, sup *supervisor, dir, script string) *proc {
	t.Helper()
	p, err := sup.start(dir, 0, 1, []string{"-c", script})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%q did not exit", script)
	}
	return p
}

// Only an exit nobody asked for, non-zero, with ErrAborted in the log,
// in exactly-once mode, is an abort to restart; everything else stays
// what it was (a crash, a failed graceful stop).
func TestAbortedOnItsOwn(t *testing.T) {
	if !strings.Contains(abortLine, exactlyonce.ErrAborted.Error()) {
		t.Fatalf("abortLine does not contain ErrAborted's text %q", exactlyonce.ErrAborted)
	}
	sup := shSupervisor()
	defer sup.killAll()
	dir := t.TempDir()
	eos := &scenario{set: settings{exactlyOnce: true}}
	alo := &scenario{}
	aborted := shProc(t, sup, dir, "echo '"+abortLine+"'; exit 1")
	if line, ok := eos.abortedOnItsOwn(aborted); !ok || line != abortLine {
		t.Errorf("exit 1 after ErrAborted: %q, %v; want the abort's line", line, ok)
	}
	if n := aborted.countLines("interval commit"); n != 1 {
		t.Errorf("countLines = %d, want 1", n)
	}
	if _, ok := alo.abortedOnItsOwn(aborted); ok {
		t.Error("at-least-once mode: an abort, want a crash")
	}
	if _, ok := eos.abortedOnItsOwn(shProc(t, sup, dir, "echo 'panic: boom'; exit 2")); ok {
		t.Error("exit 2 without ErrAborted: an abort, want a crash")
	}
	if _, ok := eos.abortedOnItsOwn(shProc(t, sup, dir, "echo '"+abortLine+"'; exit 0")); ok {
		t.Error("exit 0: an abort")
	}
	// Signalled after it exited (the SIGTERM of a step came too late):
	// still an abort. Signalled before: the answer to the signal.
	aborted.send(syscall.SIGTERM)
	if _, ok := eos.abortedOnItsOwn(aborted); !ok {
		t.Error("SIGTERM after the exit: not an abort")
	}
	aborted.mu.Lock()
	aborted.signaled = aborted.exited.Add(-time.Millisecond)
	aborted.mu.Unlock()
	if _, ok := eos.abortedOnItsOwn(aborted); ok {
		t.Error("exit 1 after a SIGTERM: an abort, want a failed graceful stop")
	}
}

// The rewinds are counted by their log line: it must be the one the
// exactly-once Group writes.
func TestRewoundLogIsTheGroupsMessage(t *testing.T) {
	src, err := os.ReadFile("../../exactlyonce/abort.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), rewoundLog) {
		t.Fatalf("internal/exactlyonce/abort.go does not log %q any more", rewoundLog)
	}
}

// restartAborted replaces the aborted process by a new incarnation of
// its slot and reports it, without a violation.
func TestRestartAbortedStartsTheNextIncarnation(t *testing.T) {
	c := testCluster(t, 2)
	sup := shSupervisor()
	defer sup.killAll()
	s := &scenario{set: settings{exactlyOnce: true, workers: 1, drainTimeout: time.Second}, sup: sup, c: c, logDir: t.TempDir(),
		out: io.Discard, began: time.Now(), live: map[int]*proc{}, inc: map[int]int{0: 1}}
	p := shProc(t, sup, s.logDir, "echo '"+abortLine+"'; exit 1")
	s.live[0] = p
	if n := s.restartAborted(); n != 1 {
		t.Fatalf("restartAborted = %d, want 1", n)
	}
	if next := s.live[0]; next == nil || next.name != "p0.2" {
		t.Fatalf("slot 0 runs %v, want p0.2", next)
	}
	want := "p0.1 exit 1"
	cause := "interval commit: committing the transaction with offsets [...]: sending the offsets to the transaction: Broker: Specified group generation id is not valid"
	if len(s.res.aborts) != 1 || !strings.HasPrefix(s.res.aborts[0], want) || !strings.HasSuffix(s.res.aborts[0], cause+`"`) {
		t.Fatalf("aborts %q, want one starting %q, ending with the cause %q", s.res.aborts, want, cause)
	}
	if len(s.res.violations) != 0 {
		t.Fatalf("violations %q, want none", s.res.violations)
	}
	if n := s.restartAborted(); n != 0 {
		t.Fatalf("restartAborted again = %d, want 0 (p0.2 did not abort)", n)
	}
}
