package main

import (
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStatCountsFieldsAfterTheCommandName(t *testing.T) {
	// A command name may hold spaces and parentheses.
	line := []byte("4242 (a) b (c) S 17 4242 4242 0 -1 4194560 100 0 0 0 300 200 0 0 20 0 1 0 99 1000 10\n")
	ppid, cpu, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if ppid != 17 || cpu != 5*time.Second {
		t.Fatalf("parseStat = ppid %d, CPU %v; want 17, 5s (300+200 ticks)", ppid, cpu)
	}
	if _, _, err := parseStat([]byte("4242 (x) S 1")); err == nil {
		t.Fatal("parseStat accepted a line without utime and stime")
	}
}

// TestProcTreeCPUCountsDescendants burns CPU in a grandchild of a shell
// that itself does nothing: the shell's tree must show that CPU, as the
// broker child's tree shows Apache Kafka's Java processes.
func TestProcTreeCPUCountsDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	const want = 200 * time.Millisecond
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond) // polls a process that runs on its own
	defer tick.Stop()
	for {
		cpu, err := procTreeCPU(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if cpu >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell's tree used %v of CPU after a minute of a busy grandchild, want at least %v", cpu, want)
		}
		<-tick.C
	}
}

func TestProcTreeCPUOfAnEndedProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := procTreeCPU(cmd.Process.Pid); err == nil {
		t.Fatal("procTreeCPU of a process that ended returned no error")
	}
}

func TestParseReapedReadsCutimeAndCstime(t *testing.T) {
	line := []byte("4242 (a) b (c) S 17 4242 4242 0 -1 4194560 100 0 0 0 300 200 40 60 20 0 1 0 99 1000 10\n")
	cpu, err := parseReaped(line)
	if err != nil {
		t.Fatal(err)
	}
	if cpu != time.Second {
		t.Fatalf("parseReaped = %v, want 1s (40+60 ticks)", cpu)
	}
	if _, err := parseReaped([]byte("4242 (x) S 1 2 3 4 5 6 7 8 9 10 11 12")); err == nil {
		t.Fatal("parseReaped accepted a line without cutime and cstime")
	}
}

// TestServerCPUCountsEndedChildren burns CPU in a grandchild of a shell
// that ends before the shell goes on: the shell's serverCPU must still
// show it, as the PostgreSQL postmaster's shows the CPU of a run's
// backends once the run closed its connections.
func TestServerCPUCountsEndedChildren(t *testing.T) {
	// A fixed amount of work (about 0.25 s of CPU here), not a fixed
	// wall time: on a loaded machine a busy loop bounded by time gets
	// only a fraction of a core.
	cmd := exec.Command("sh", "-c", `sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; echo ended; exec cat`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	line := make([]byte, 6)
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "ended\n" {
		t.Fatalf("the shell printed %q (%v), want \"ended\"", line, err)
	}
	cpu, err := serverCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if want := 50 * time.Millisecond; cpu < want {
		t.Fatalf("serverCPU of the shell after its busy grandchild ended: %v, want at least %v", cpu, want)
	}
}
