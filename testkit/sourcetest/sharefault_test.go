package sourcetest_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// faultEnv carries the ShareFault to TestFakeShareFault in the child
// process TestBrokenShareSourcesFail starts.
const faultEnv = "SOURCETEST_SHARE_FAULT"

// TestFakeShareFault runs the share scenarios on a fake share source
// with the fault faultEnv names: run by TestBrokenShareSourcesFail, which
// expects it to fail; skipped otherwise.
func TestFakeShareFault(t *testing.T) {
	f, err := strconv.Atoi(os.Getenv(faultEnv))
	if err != nil {
		t.Skipf("run by TestBrokenShareSourcesFail (with %s set)", faultEnv)
	}
	sourcetest.WaitTimeout = 5 * time.Second // the broken sources may never finish
	d := sourcetest.NewFakeShareDriver()
	d.Fault = sourcetest.ShareFault(f)
	sourcetest.RunShare(t, d)
}

// Each broken fake share source fails the scenario that exercises the
// clause it breaks, and the failure cites that clause (§3 and §9, §10
// through the checking group; §11 and §12, which only the broker sees,
// through the scenario's checks).
func TestBrokenShareSourcesFail(t *testing.T) {
	for _, c := range []struct {
		fault    sourcetest.ShareFault
		scenario string
		clause   int
		says     string
	}{
		{sourcetest.FaultPollAhead, "PauseAndResume", sourcetest.ClausePause, "delivered after Deliver asked for a pause and a later poll"},
		{sourcetest.FaultReleaseAccepted, "AcceptEachOnce", sourcetest.ClauseAcknowledge, "delivered again after the source took its outcome accepted"},
		{sourcetest.FaultCommit, "AcceptEachOnce", sourcetest.ClauseNoCommit, "(reported with Group.Committed)"},
		{sourcetest.FaultAcceptUnfinished, "ShutdownReleasesUnfinished", sourcetest.ClauseRelease, "distinct offsets processed, want 27 ([13, 40))"},
		{sourcetest.FaultIgnoreMaxDeliveries, "MaxDeliveriesDeadLettered", sourcetest.ClauseMaxDeliveries, "the poison record ran through the graph 5 times, want 3"},
	} {
		t.Run(fmt.Sprintf("§%d %s", c.clause, c.scenario), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestFakeShareFault$/^"+c.scenario+"$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", faultEnv, c.fault))
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the broken source passed %s:\n%s", c.scenario, out)
			}
			cited := fmt.Sprintf("contract §%d (%s)", c.clause, sourcetest.Violation{Clause: c.clause}.Rule())
			if !strings.Contains(string(out), cited) || !strings.Contains(string(out), c.says) {
				t.Errorf("output does not cite %q with %q:\n%s", cited, c.says, out)
			}
		})
	}
}
