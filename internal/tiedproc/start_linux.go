//go:build linux

package tiedproc

import (
	"os/exec"
	"runtime"
	"syscall"
)

// Start starts cmd with SIGKILL as its parent-death signal, so that it
// ends when this process ends, however that ends. The kernel sends that
// signal when the thread that forked the child ends, which is not only
// when the process does: the Go runtime ends a thread when a goroutine
// locked to it returns, and any goroutine may lock the thread it runs
// on. So the child is forked from a goroutine that keeps its thread
// locked, out of other goroutines' reach, until the child has been
// reaped. Go sets the signal after switching to cmd's credentials, which
// would otherwise clear it.
func Start(cmd *exec.Cmd) (*Proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p := &Proc{done: make(chan struct{})}
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
