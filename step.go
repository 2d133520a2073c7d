package sortie

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Limits of a run's durable steps, in bytes and counts, checked by the
// worker before it records a step and by the control plane when it does.
const (
	// MaxStepNameBytes is the longest step name.
	MaxStepNameBytes = 128
	// MaxStepResultBytes is the largest result of one step kept inline
	// (its JSON, or its sealed form for a secret step). A larger one is
	// kept by reference ([Step.ResultRef]) in the worker's
	// [PayloadStore], up to that store's per-payload maximum
	// ([PayloadLimits.MaxPayloadBytes]).
	MaxStepResultBytes = 64 << 10
	// MaxSecretStepInlineBytes is the largest result of a secret step
	// sealed inline ([Step.Sealed]): its envelope stays under
	// MaxStepResultBytes. A larger one is kept by reference.
	MaxSecretStepInlineBytes = 40 << 10
	// MaxSteps is the most steps a run may record.
	MaxSteps = 1000
	// MaxStepsBytes is the most result bytes a run's steps may hold in
	// all, so every attempt can be handed them: their inline part
	// ([Step.Size]; a result kept by reference counts its reference, and
	// the payload store's per-run maximum bounds its value).
	MaxStepsBytes = 1 << 20
)

// StepCompleted is the status of a recorded step: only completed steps
// are recorded (a failed step is retried by its attempt, or by the next).
const StepCompleted = "completed"

// Step is one completed durable step of a run: recorded in the control
// plane by the attempt that ran it (before the worker's Step call
// returned) and handed to every later attempt of the run, retry or
// resume, which gets its result without running it again.
type Step struct {
	// Name identifies the step in its run: 1-[MaxStepNameBytes] bytes of
	// UTF-8 without control characters. Names are unique per run.
	Name string `json:"name"`
	// Attempt is the attempt that ran and recorded the step, from 1.
	Attempt int `json:"attempt"`
	// Status is [StepCompleted].
	Status string `json:"status"`
	// Secret says the result is secret: the control plane stores it
	// sealed (Sealed, never Result), and it is in the clear only inside
	// the worker (a session's invoke frame, an exec worker's invocation).
	Secret bool `json:"secret,omitempty"`
	// Result is the step's result, JSON of at most [MaxStepResultBytes];
	// absent when Sealed or ResultRef is set.
	Result json.RawMessage `json:"result,omitempty"`
	// Sealed is a secret step's result, envelope-encrypted by the worker
	// runtime and bound to the run and the step's name; opaque to
	// everything but the worker. At most [MaxStepResultBytes].
	Sealed json.RawMessage `json:"sealed,omitempty"`
	// ResultRef is set instead of Result or Sealed for a result over
	// [MaxStepResultBytes] (or whose sealed form is): the worker kept it
	// in its [PayloadStore] as [StepPayloadName] (a worker that reaches
	// the store only through presigned URLs: in one of its attempt's
	// slots, [StepSlotPayloadName]), sealed like every
	// payload, so a secret step's reference holds no plaintext either.
	ResultRef *PayloadRef `json:"result_ref,omitempty"`
	// StartedMs is when the step's first try started, Unix ms.
	StartedMs int64 `json:"started_ms"`
	// DurationMs is how long its tries took in all, in ms.
	DurationMs int64 `json:"duration_ms"`
	// Tries is how many times the step ran in its attempt, from 1.
	Tries int `json:"tries,omitempty"`
	// RecordedMs is when the control plane recorded it, Unix ms: set by
	// the control plane (from the recording call's time).
	RecordedMs int64 `json:"recorded_ms,omitempty"`
}

// CheckStepName returns a [*ValidationError] for field "step.name"
// unless name is a valid step name.
func CheckStepName(name string) error {
	if name == "" || len(name) > MaxStepNameBytes || !utf8.ValidString(name) {
		return invalidf("step.name", "must be 1-%d bytes of UTF-8, got %d bytes", MaxStepNameBytes, len(name))
	}
	if !printable(name) {
		return invalidf("step.name", "%.64q holds a control character", name)
	}
	return nil
}

// Validate checks the step's fields and sizes and returns a
// [*ValidationError] naming the field.
func (s *Step) Validate() error {
	if err := CheckStepName(s.Name); err != nil {
		return err
	}
	if s.Attempt < 1 || s.Attempt > 1000 {
		return invalidf("step.attempt", "%d outside 1..1000", s.Attempt)
	}
	if s.Status != StepCompleted {
		return invalidf("step.status", "%.32q, want %q", s.Status, StepCompleted)
	}
	if n := btoi(len(s.Result) > 0) + btoi(len(s.Sealed) > 0) + btoi(s.ResultRef != nil); n != 1 {
		return invalidf("step.result", "step %.64q: set exactly one of result, sealed and result_ref", s.Name)
	}
	if s.ResultRef != nil {
		if err := s.ResultRef.Validate("step.result_ref"); err != nil {
			return err
		}
	}
	if len(s.Sealed) > 0 && !s.Secret {
		return invalidf("step.secret", "step %.64q: a sealed result is a secret step's", s.Name)
	}
	if err := checkJSON("step.result", s.Result, MaxStepResultBytes); err != nil {
		return err
	}
	if err := checkJSON("step.sealed", s.Sealed, MaxStepResultBytes); err != nil {
		return err
	}
	if s.StartedMs < 0 || s.DurationMs < 0 || s.Tries < 0 || s.RecordedMs < 0 {
		return invalidf("step", "step %.64q: started_ms, duration_ms, tries and recorded_ms must not be negative", s.Name)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Size is what the step counts against [MaxStepsBytes]: its result's or
// sealed result's bytes, or for a result kept by reference the bytes of
// its reference's JSON.
func (s *Step) Size() int {
	n := len(s.Result) + len(s.Sealed)
	if s.ResultRef != nil {
		b, _ := json.Marshal(s.ResultRef)
		n += len(b)
	}
	return n
}

// Same reports whether s and o carry the same content: every field but
// RecordedMs, JSON compared compacted, references by what they hold
// (size and SHA-256), not where. The control plane treats a second
// record of the same step as a no-op, and other content under a recorded
// name as a conflict.
func (s *Step) Same(o *Step) bool {
	return s.Name == o.Name && s.Attempt == o.Attempt && s.Status == o.Status && s.Secret == o.Secret &&
		s.StartedMs == o.StartedMs && s.DurationMs == o.DurationMs && s.Tries == o.Tries &&
		bytes.Equal(compact(s.Result), compact(o.Result)) && bytes.Equal(compact(s.Sealed), compact(o.Sealed)) &&
		sameContent(s.ResultRef, o.ResultRef)
}

// sameContent reports whether a and b are both nil or name the same
// content: the same size and SHA-256.
func sameContent(a, b *PayloadRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Size == b.Size && a.SHA256 == b.SHA256
}

// Clone returns a deep copy of s.
func (s *Step) Clone() Step {
	c := *s
	c.Result = bytes.Clone(s.Result)
	c.Sealed = bytes.Clone(s.Sealed)
	if s.ResultRef != nil {
		r := *s.ResultRef
		c.ResultRef = &r
	}
	return c
}

// SortSteps orders steps as every control plane returns them: by
// attempt, then start time, then name.
func SortSteps(steps []Step) {
	slices.SortFunc(steps, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.Attempt, b.Attempt), cmp.Compare(a.StartedMs, b.StartedMs), cmp.Compare(a.Name, b.Name))
	})
}

// CheckSteps checks a run's steps as a whole: each valid, names unique,
// at most [MaxSteps] steps and [MaxStepsBytes] of results. field names
// the list in errors ("steps").
func CheckSteps(field string, steps []Step) error {
	if len(steps) > MaxSteps {
		return invalidf(field, "%d steps, limit %d per run", len(steps), MaxSteps)
	}
	seen := make(map[string]bool, len(steps))
	size := 0
	for i := range steps {
		if err := steps[i].Validate(); err != nil {
			return err
		}
		if seen[steps[i].Name] {
			return invalidf(field, "step %.64q appears twice", steps[i].Name)
		}
		seen[steps[i].Name] = true
		size += steps[i].Size()
	}
	if size > MaxStepsBytes {
		return invalidf(field, "%d bytes of step results, limit %d per run", size, MaxStepsBytes)
	}
	return nil
}

// StepRecord asks [ControlPlane.RecordStep] to record Step, completed by
// the claimed attempt (RunID, Attempt, LaunchID); Step.Attempt must be
// Attempt. NowMs, Unix ms, becomes the step's RecordedMs.
type StepRecord struct {
	RunID    RunID
	Attempt  int
	LaunchID string
	Step     Step
	NowMs    int64
}

// StepsRef stands in an [Invocation] for the run's completed steps when
// carrying them would break the launcher's invocation limit: the worker
// reads them from where it reports (the control plane, or the callback
// host). Count and Bytes say what it must find.
type StepsRef struct {
	// Count is how many steps the run had when the attempt was launched.
	Count int `json:"count"`
	// Bytes is their results' size in all ([Step.Size]).
	Bytes int `json:"bytes"`
	// ResultRefs are the references of the steps' results kept by
	// reference ([Step.ResultRef]), set by the engine when it replaces
	// [Invocation.Steps] with the StepsRef, so that its [Sealer] can
	// grant reads of them ([Invocation.StepResultRefs]). They never cross
	// the wire (a worker reads the steps, references included, where it
	// reports): only in the engine's process are they set.
	ResultRefs []*PayloadRef `json:"-"`
}
