package procstatus_test

import (
	"os/exec"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/procstatus"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		script string
		phase  sortie.Phase
		code   int
		signal string
	}{
		{"exit 0", sortie.PhaseSucceeded, 0, ""},
		{"exit 97", sortie.PhaseFailed, 97, ""},
		{"kill -KILL $$", sortie.PhaseFailed, -1, "SIGKILL"},
	} {
		cmd := exec.Command("/bin/sh", "-c", tc.script)
		err := cmd.Run()
		st := procstatus.Of("worker", cmd.ProcessState, err)
		if st.Phase != tc.phase || st.ExitCode == nil || *st.ExitCode != tc.code || st.Signal != tc.signal {
			t.Errorf("Of(sh -c %q) = %+v (exit %v), want %s, exit %d, signal %q", tc.script, st, st.ExitCode, tc.phase, tc.code, tc.signal)
		}
	}
	if st := procstatus.Of("worker", nil, exec.ErrNotFound); st.Phase != sortie.PhaseUnknown {
		t.Errorf("Of(nil state) = %+v, want unknown", st)
	}
}
