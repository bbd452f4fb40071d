//go:build linux

package pgtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Start's cleanup stops the server, leaving no process of its group, and
// removes its directory.
func TestStartCleanupRemovesEverything(t *testing.T) {
	var tree []int
	var dir string
	t.Run("server", func(t *testing.T) {
		srv := Start(t)
		connect(t, srv.DSN("postgres")) // a session open at cleanup
		tree, dir = serverTree(t, srv), srv.dir
	})
	if left := exist(tree); len(left) > 0 {
		t.Errorf("processes %v of the server %v are left after the test", left, tree)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the server's directory %s after the test: %v", dir, err)
	}
}

// childEnv makes TestChildServer start a server, print its postmaster's
// pid and directory, and wait.
const childEnv = "PGTEST_CHILD_SERVER"

// TestChildServer is the test binary that TestServerDiesWithTestBinary
// kills; it does nothing otherwise.
func TestChildServer(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs in the child of TestServerDiesWithTestBinary")
	}
	srv := Start(t)
	fmt.Printf("server %d %s\n", postmaster(t, srv), srv.dir)
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
}

// A server does not outlive its test binary: when the test binary is
// killed (no cleanup runs), every process of the server ends.
func TestServerDiesWithTestBinary(t *testing.T) {
	shared.Get(t) // skips, or fails, as the child would without PostgreSQL
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var pm int
	var dir string
	timeout := time.After(2 * time.Minute)
	for pm == 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("the child exited without starting a server; stderr:\n%s", stderr.String())
			}
			_, _ = fmt.Sscanf(line, "server %d %s", &pm, &dir)
		case <-timeout:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the child started no server within 2m; stderr:\n%s", stderr.String())
		}
	}
	defer os.RemoveAll(dir) // the killed child cannot
	tree := append([]int{pm}, descendants(pm)...)
	if len(tree) < 4 {
		t.Fatalf("the child's server processes: %v, want the postmaster and its children", tree)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for range lines { // until the child's stdout closes
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(goneTimeout)
	for backoff := time.Millisecond; len(alive(tree)) > 0; backoff = min(2*backoff, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			left := alive(tree)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v of the server %v still run %v after its test binary was killed", left, tree, goneTimeout)
		}
		time.Sleep(backoff)
	}
}
