//go:build !linux

package pgtest

import "os/exec"

// startTied starts cmd and returns a channel closed once the process was
// reaped (Wait's error in *waitErr). Without Linux's parent-death signal,
// a server outlives a test binary that is killed; stopping the server
// (Stop, Kill, the cleanups) still ends all of its processes.
func startTied(cmd *exec.Cmd, waitErr *error) (<-chan struct{}, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		*waitErr = cmd.Wait()
		close(done)
	}()
	return done, nil
}
