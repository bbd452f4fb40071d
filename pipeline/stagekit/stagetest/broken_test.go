package stagetest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/pipeline/stagekit/stagetest"
)

// doneAndPass is a broken stage: it completes every value's ticket and
// still passes the value on.
func doneAndPass(in pipeline.Stream[int]) pipeline.Stream[int] {
	return stagekit.AddStage(in, stagekit.StageSpec{Name: "DoneAndPass"}, func(s *stagekit.Stage, inl *stagekit.Inlet[int], out *stagekit.Outlet[int]) error {
		return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[int]) error {
			buf := out.Buffer()
			for _, it := range chunk {
				s.Done(it.Ticket)
				buf = append(buf, it)
			}
			if !out.Send(buf) {
				return stagekit.ErrStop
			}
			return nil
		})
	})
}

// forgets is a broken stage: it never completes the value 3 (neither
// passes it on nor drops it).
func forgets(in pipeline.Stream[int]) pipeline.Stream[int] {
	return stagekit.AddStage(in, stagekit.StageSpec{Name: "Forgets"}, func(s *stagekit.Stage, inl *stagekit.Inlet[int], out *stagekit.Outlet[int]) error {
		return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[int]) error {
			buf := out.Buffer()
			for _, it := range chunk {
				if it.Value != 3 {
					buf = append(buf, it)
				}
			}
			if !out.Send(buf) {
				return stagekit.ErrStop
			}
			return nil
		})
	})
}

var broken = map[string]func(pipeline.Stream[int]) pipeline.Stream[int]{
	"DoneAndPass": doneAndPass,
	"Forgets":     forgets,
}

// TestBrokenStage runs the suite on a broken stage when the environment
// names one (see TestSuiteFailsBrokenStages); otherwise it is skipped.
func TestBrokenStage(t *testing.T) {
	name := os.Getenv("STAGETEST_BROKEN")
	if name == "" {
		t.Skip("run by TestSuiteFailsBrokenStages")
	}
	stagetest.Run(t, stagetest.Stage[int, int]{
		Name:   name,
		Build:  broken[name],
		Input:  func(i int) int { return i },
		Origin: func(v int) []int { return []int{v} },
	})
}

// TestSuiteFailsBrokenStages runs the suite on each broken stage in a
// subprocess, which must fail, and checks the failures name the clauses
// the stage breaks.
func TestSuiteFailsBrokenStages(t *testing.T) {
	for name, want := range map[string][]string{
		"DoneAndPass": {
			"DoneAndPass: each input yields its outputs once: Run returned",
			"ticket",
			"DoneAndPass: commits exactly the completed prefix:",
			"DoneAndPass: no commit before every derived value completed:",
		},
		"Forgets": {
			"Forgets: each input yields its outputs once: commit 12 (every output value completed): not within 1h0m0s (committed 3)",
			"Forgets: commits exactly the completed prefix: every output value arrived: not within 1h0m0s",
			"Forgets: revoke drains and Run returns: after the revoke committed 3, want 12",
			"Forgets: no goroutine left: commit 12",
		},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStage$", "-test.count=1")
			cmd.Env = append(os.Environ(), "STAGETEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed the broken stage %s:\n%s", name, out)
			}
			for _, w := range want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the suite's failure on %s does not say %q:\n%s", name, w, out)
				}
			}
		})
	}
}
