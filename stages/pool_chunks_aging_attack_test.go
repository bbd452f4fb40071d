//go:build !race

// The race detector turns the runtime's tiny allocator off, and with it
// what this file attacks: run it without -race.

package stages

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"unsafe"
)

// agingPin keeps the tiny object the child process allocated beside the
// aging's sentinel alive.
var agingPin *byte

// The free chunks of every Pool age at each garbage collection through a
// cleanup attached to a fresh sentinel (pool_chunks.go), re-armed by the
// cleanup itself. The runtime's tiny allocator packs small pointer-free
// objects into shared 16-byte blocks, freed only once all of their
// objects are unreachable, so the agings must go on while a tiny object
// allocated right before the sentinel lives: the sentinel must not share
// its block.
//
// The child process of this test (a process of its own, so that its first
// Pool arms the aging) lines the tiny block up, keeps one byte beside the
// sentinel, makes its first Pool's free chunks, and collects: the agings
// must go on.
func TestPoolChunksAgeWhileATinyObjectBesideTheSentinelLives(t *testing.T) {
	const childEnv = "SLUICE_TEST_POOL_AGING_CHILD"
	if os.Getenv(childEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPoolChunksAgeWhileATinyObjectBesideTheSentinelLives$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	if agedPools != nil {
		t.Fatal("a Pool's free chunks were made before the test: the aging is armed already")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Start a tiny block: the next one-byte object (the sentinel) goes
	// right after this one, in the same block.
	for {
		b := new(byte)
		agingPin = b
		if uintptr(unsafe.Pointer(b))%16 == 0 {
			break
		}
	}
	type in [3]int8 // a type of its own
	poolChunksOf[in, int]()
	if agesWithin(50) {
		return
	}
	t.Fatalf("50 garbage collections and the free chunks never aged: the aging's sentinel shares its tiny block with a live object (%p)", agingPin)
}
