//go:build linux

package tiedproc

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// A started process carries SIGKILL as its parent-death signal, and its
// exit status is Err once Done is closed.
func TestStartTiesTheChildAndReportsItsExit(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if sig := cmd.SysProcAttr.Pdeathsig; sig != syscall.SIGKILL {
		t.Errorf("Pdeathsig = %v, want SIGKILL", sig)
	}
	<-p.Done()
	var exit *exec.ExitError
	if !errors.As(p.Err(), &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Err = %v, want exit status 3", p.Err())
	}
}

// Run returns what the process's Wait returned; a command that cannot
// start is Start's error.
func TestRunReturnsTheExit(t *testing.T) {
	if err := Run(exec.Command("true")); err != nil {
		t.Fatalf("Run(true) = %v, want nil", err)
	}
	if err := Run(exec.Command("/nonexistent/binary")); err == nil {
		t.Fatal("Run of a missing binary = nil, want an error")
	}
}
