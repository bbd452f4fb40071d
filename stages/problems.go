package stages

import (
	"fmt"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// problem records a bad argument of a stage's constructor in its spec
// (the first one wins), so that adding the stage fails the build with a
// *sluice.BuildError naming the stage (see stagekit.StageSpec.Problem).
func problem(sp *stagekit.StageSpec, format string, args ...any) {
	if sp.Problem == nil {
		sp.Problem = fmt.Errorf(format, args...)
	}
}
