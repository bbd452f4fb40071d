//go:build !linux

package tiedproc

import "os/exec"

// Start starts cmd. Without Linux's parent-death signal the process
// outlives this one if this one is killed; its owner still ends it on
// every orderly path (a server's Stop, Kill and cleanups).
func Start(cmd *exec.Cmd) (*Proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}
