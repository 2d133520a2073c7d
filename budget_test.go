package sortie_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/testwait"
)

const waitShort = 10 * time.Second

// limitedLauncher carries invocations of at most limit bytes.
type limitedLauncher struct {
	countingLauncher
	limit int
}

func (l *limitedLauncher) MaxInvocationBytes() (int, string) { return l.limit, "the test's limit" }

// A resume whose input would make the invocation too large for the
// launcher is refused before the input is stored, naming it; a submission
// is refused naming its largest variable.
func TestInvocationBudget(t *testing.T) {
	cp := memory.New()
	defer cp.Close()
	l := &limitedLauncher{limit: 8 << 10}
	e := sortie.NewEngine(cp, l, probeAgent, nil)
	defer e.Close()
	id := interrupted(t, cp)
	before, _ := cp.Get(context.Background(), id)
	big := json.RawMessage(`{"answer":"` + strings.Repeat("y", 9<<10) + `"}`)
	_, err := e.Resume(context.Background(), id, big)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "input" || !strings.Contains(ve.Reason, "8192") {
		t.Fatalf("Resume(9 KiB input, 8 KiB limit) = %v, want a ValidationError on input naming 8192", err)
	}
	if after, _ := cp.Get(context.Background(), id); after.Version != before.Version || after.State != sortie.StateInputRequired {
		t.Errorf("run after the refused resume = %s version %d, want unchanged (input-required, version %d)", after.State, after.Version, before.Version)
	}
	vars := json.RawMessage(`{"a":"` + strings.Repeat("x", 3<<10) + `","b":"` + strings.Repeat("x", 6<<10) + `"}`)
	_, err = e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
	if !errors.As(err, &ve) || ve.Field != "variables.b" {
		t.Fatalf("Submit(variables a 3 KiB, b 6 KiB; 8 KiB limit) = %v, want a ValidationError on variables.b", err)
	}
	if _, err := e.Resume(context.Background(), id, json.RawMessage(`{"answer":"ok"}`)); err != nil {
		t.Fatalf("Resume(small input) = %v, want nil", err)
	}
	testwait.Until(t, "the resumed attempt's Start", waitShort, func() bool { return l.starts.Load() == 1 })
}
