//go:build linux

package kafkatest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeCommand writes an executable shell script at dir/name that writes
// its pid into the FIFO at fifo and then becomes `sleep 300`, like mvn
// and java, whose scripts exec the JVM.
func fakeCommand(t *testing.T, dir, name, fifo string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %q\nexec sleep 300\n", fifo)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// readPid reads the pid that a fake command writes into fifo, or fails
// the test when exited closes first or a minute passes.
func readPid(t *testing.T, fifo string, exited <-chan struct{}) int {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the writer opens it
		got <- strings.TrimSpace(string(b))
	}()
	select {
	case s := <-got:
		pid, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("pid %q: %v", s, err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return pid
	case <-exited:
		// Unblock the reader.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-got
		t.Fatal("the process ended before it ran the fake command")
	case <-time.After(time.Minute):
		t.Fatal("the fake command did not run within a minute")
	}
	return 0
}

// alive reports whether pid is a process that has not ended (a zombie
// has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// endsWithin reports whether pid ends within d (a deadline for the kernel
// to deliver a signal, not a synchronisation).
func endsWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

const envHelper = "KAFKATEST_HELPER_PROCESS"

// TestHelperProcessResolveClasspath is not a test: the tests below run
// the test binary again with it, as a process to kill.
func TestHelperProcessResolveClasspath(t *testing.T) {
	if os.Getenv(envHelper) != "classpath" {
		t.Skip("a helper process of TestMavenEndsWithTheTestBinary")
	}
	_, err := apacheClasspath(context.Background())
	t.Fatalf("apacheClasspath returned: %v", err)
}

// Maven is a Java process too: when the test binary is killed (SIGKILL,
// or the panic of go test -timeout) while Maven resolves the broker's
// jars, Maven ends with it.
func TestMavenEndsWithTheTestBinary(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	fakeCommand(t, bin, "mvn", fifo)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessResolveClasspath$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelper+"=classpath", "SLUICE_KAFKA_CACHE="+filepath.Join(dir, "cache"),
		"PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	pid := readPid(t, fifo, exited)
	_ = cmd.Process.Kill()
	<-exited
	if !endsWithin(pid, 5*time.Second) {
		t.Fatalf("mvn (pid %d) still runs after the test binary that started it was killed", pid)
	}
}

// A test that locks its goroutine to a thread and returns without
// unlocking ends that thread (the Go runtime's rule). A broker process
// must not die with it: it is killed when the test binary ends, not when
// some thread of it does. Which thread forks a node, and what that thread
// does afterwards, is the scheduler's choice: the test tries several
// times.
func TestBrokerProcessOutlivesThreadsThatExitLocked(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "jdk")
	t.Setenv("JAVA_HOME", home)
	for round := range 5 {
		// Nodes started one after the other, as startApache does.
		var nodes []*apacheNode
		for i := range 4 {
			nd := filepath.Join(dir, fmt.Sprintf("r%d-n%d", round, i))
			fifo := nd + ".pid"
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			fakeCommand(t, filepath.Join(home, "bin"), "java", fifo)
			if err := os.MkdirAll(nd, 0o755); err != nil {
				t.Fatal(err)
			}
			n := &apacheNode{id: i + 1, dir: nd}
			if err := n.start(); err != nil {
				t.Fatal(err)
			}
			defer n.stop(false, 0)
			readPid(t, fifo, n.exited())
			nodes = append(nodes, n)
		}
		// Goroutines that lock a thread each and wait take every idle
		// thread of the runtime, then end them all.
		release := make(chan struct{})
		var locked sync.WaitGroup
		for range 64 {
			locked.Add(1)
			go func() {
				runtime.LockOSThread()
				locked.Done()
				<-release
			}()
		}
		locked.Wait()
		close(release)
		grace := time.After(500 * time.Millisecond) // for the kernel's signal, if one is sent
		<-grace
		for i, n := range nodes {
			select {
			case <-n.exited():
				t.Fatalf("round %d: node %d ended when threads of the test binary ended", round, i+1)
			default:
			}
		}
	}
}
