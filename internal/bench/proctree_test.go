package main

import (
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
