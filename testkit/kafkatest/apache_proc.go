//go:build linux

package kafkatest

import (
	"os/exec"
	"runtime"
	"syscall"
)

// tiedProc is a child process that cannot outlive this one.
type tiedProc struct {
	done chan struct{} // closed once the process was reaped
	err  error         // what Wait returned; read after done
}

// startTied starts cmd with SIGKILL as its parent-death signal, so that
// it ends when this process ends, however that ends. The kernel sends
// that signal when the thread that forked the child ends, which is not
// only when the process does: the Go runtime ends a thread when a
// goroutine locked to it returns, and any goroutine may lock the thread
// it runs on. So the child is forked from a goroutine that keeps its
// thread locked, out of other goroutines' reach, until the child has been
// reaped.
func startTied(cmd *exec.Cmd) (*tiedProc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p := &tiedProc{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// runTied is cmd.Run for a process started with startTied.
func runTied(cmd *exec.Cmd) error {
	p, err := startTied(cmd)
	if err != nil {
		return err
	}
	<-p.done
	return p.err
}
