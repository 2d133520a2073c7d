package memory

import (
	"context"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// RecordStep implements [sortie.ControlPlane.RecordStep].
func (c *ControlPlane) RecordStep(_ context.Context, s sortie.StepRecord) (*sortie.Step, error) {
	if err := controlplane.CheckStepRecord(s); err != nil {
		return nil, err
	}
	if err := c.lock("record step"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	r, ok := c.runs[s.RunID]
	if !ok {
		return nil, fmt.Errorf("memory: record step run %s: %w", s.RunID, sortie.ErrNotFound)
	}
	if err := controlplane.CheckStep(r, s); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	have := c.steps[s.RunID]
	size := 0
	var stored *sortie.Step
	for i := range have {
		size += have[i].Size()
		if have[i].Name == s.Step.Name {
			stored = &have[i]
		}
	}
	step, insert, err := controlplane.PlaceStep(s, stored, len(have), size)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if insert {
		c.steps[s.RunID] = append(have, step.Clone())
		c.hub.Notify(s.RunID)
	}
	return &step, nil
}

// Steps implements [sortie.ControlPlane.Steps].
func (c *ControlPlane) Steps(_ context.Context, id sortie.RunID) ([]sortie.Step, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := c.lock("steps"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if _, ok := c.runs[id]; !ok {
		return nil, fmt.Errorf("memory: steps of run %s: %w", id, sortie.ErrNotFound)
	}
	out := make([]sortie.Step, 0, len(c.steps[id]))
	for i := range c.steps[id] {
		out = append(out, c.steps[id][i].Clone())
	}
	sortie.SortSteps(out)
	return out, nil
}
