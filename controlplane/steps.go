package controlplane

import (
	"fmt"

	"github.com/sortie-run/sortie"
)

// CheckStepRecord checks a [sortie.ControlPlane.RecordStep] call's input
// before anything is read: the attempt's identity and a valid step of
// that attempt. It returns a [*sortie.ValidationError].
func CheckStepRecord(s sortie.StepRecord) error {
	if err := CheckAttempt(s.RunID, s.Attempt, s.LaunchID); err != nil {
		return err
	}
	if err := s.Step.Validate(); err != nil {
		return err
	}
	if s.Step.Secret && len(s.Step.Result) > 0 {
		return sortie.Invalidf("step.sealed", "step %q is secret: the control plane stores it sealed (or by reference to a sealed object), never in the clear", s.Step.Name)
	}
	if s.Step.Attempt != s.Attempt {
		return sortie.Invalidf("step.attempt", "%d, but the recording attempt is %d", s.Step.Attempt, s.Attempt)
	}
	return nil
}

// CheckStep checks that r takes s: the attempt is claimed and live
// (ErrConflict for a stale claim, ErrTerminal for a terminal run, whose
// steps never change).
func CheckStep(r *sortie.Run, s sortie.StepRecord) error {
	_, err := live(r, "record step", s.Attempt, s.LaunchID)
	return err
}

// PlaceStep decides what RecordStep does once the claim is checked, given
// the step stored under s's name (nil for none) and how many steps and
// result bytes the run holds: it returns the step to store (RecordedMs
// set), or the stored one with insert false when s is the same step
// again. Other content under the name is ErrConflict; a run that would
// break [sortie.MaxSteps] or [sortie.MaxStepsBytes] is a
// [*sortie.ValidationError] naming "steps".
func PlaceStep(s sortie.StepRecord, stored *sortie.Step, count, size int) (step sortie.Step, insert bool, err error) {
	if stored != nil {
		if !stored.Same(&s.Step) {
			return sortie.Step{}, false, fmt.Errorf("record step %q of run %s: recorded by attempt %d with other content: %w",
				s.Step.Name, s.RunID, stored.Attempt, sortie.ErrConflict)
		}
		return stored.Clone(), false, nil
	}
	if err := CheckStepRoom(s.Step, count, size); err != nil {
		return sortie.Step{}, false, err
	}
	step = s.Step.Clone()
	step.RecordedMs = s.NowMs
	return step, true, nil
}

// CheckStepRoom checks that a run holding count steps of size result
// bytes has room for s.
func CheckStepRoom(s sortie.Step, count, size int) error {
	if count+1 > sortie.MaxSteps {
		return sortie.Invalidf("steps", "step %.64q would be step %d of the run, limit %d", s.Name, count+1, sortie.MaxSteps)
	}
	if size+s.Size() > sortie.MaxStepsBytes {
		return sortie.Invalidf("steps", "step %.64q would bring the run's step results to %d bytes, limit %d", s.Name, size+s.Size(), sortie.MaxStepsBytes)
	}
	return nil
}
