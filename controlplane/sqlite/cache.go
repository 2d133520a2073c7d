package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sortie-run/sortie"
)

// maxCachedRuns bounds the run cache.
const maxCachedRuns = 1024

// runCache keeps the runs this handle decoded last, by ID and Version: a
// run's JSON is decoded once per version, not at every read (a
// follower's, the engine's, the next change's). Every change of a run
// record raises its Version (in this process or another), so an entry
// whose version is the stored one is the stored run. Only runs decoded
// from committed bodies enter it, so a copy of an entry is exactly what
// decoding the stored body gives. It is safe for concurrent use; the zero
// value is ready.
type runCache struct {
	mu   sync.Mutex
	runs map[sortie.RunID]*sortie.Run
}

// get returns a copy of the cached run id at version, or nil.
func (c *runCache) get(id sortie.RunID, version int64) *sortie.Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.runs[id]; r != nil && r.Version == version {
		return copyRun(r)
	}
	return nil
}

// put keeps a copy of r, a run as decoded from a committed body, unless a
// later version is kept.
func (c *runCache) put(r *sortie.Run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.runs[r.ID]; old != nil && old.Version > r.Version {
		return
	}
	if c.runs == nil {
		c.runs = make(map[sortie.RunID]*sortie.Run)
	}
	if len(c.runs) >= maxCachedRuns {
		for id := range c.runs { // forget a quarter, chosen at random
			if delete(c.runs, id); len(c.runs) < maxCachedRuns*3/4 {
				break
			}
		}
	}
	c.runs[r.ID] = copyRun(r)
}

// forget drops run id (deleted).
func (c *runCache) forget(id sortie.RunID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, id)
}

// load reads run id through q: the cached copy when its version is the
// stored one, else the decoded body. committed says q reads committed
// data (a read connection, not the writer's transaction, which may hold
// changes that are not committed yet): only then is the run kept.
func (c *runCache) load(ctx context.Context, q querier, id sortie.RunID, committed bool) (*sortie.Run, error) {
	var version int64
	var body []byte
	err := q.QueryRowContext(ctx, `SELECT version, body FROM runs WHERE id = ?`, string(id)).Scan(&version, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, sortie.ErrNotFound)
	} else if err != nil {
		return nil, dbErr("load run "+string(id), err)
	}
	if r := c.get(id, version); r != nil {
		return r, nil
	}
	r, err := decodeRun(body)
	if err == nil && committed {
		c.put(r)
	}
	return r, err
}

// copyRun returns a deep copy of r that keeps every field exactly as it
// is (nil stays nil, empty stays empty; sortie.Run.Clone goes through
// JSON, which costs as much as decoding). TestCopyRunIsDeep fails when a
// field of sortie.Run is not copied deeply.
func copyRun(r *sortie.Run) *sortie.Run {
	c := *r
	c.Labels = maps.Clone(r.Labels)
	if r.Agent.Models != nil {
		c.Agent.Models = make(map[string]sortie.ModelProfile, len(r.Agent.Models))
		for name, m := range r.Agent.Models {
			m.Options = bytes.Clone(m.Options)
			c.Agent.Models[name] = m
		}
	}
	c.Variables = bytes.Clone(r.Variables)
	c.ConfigRefs = slices.Clone(r.ConfigRefs)
	c.SealedConfig = bytes.Clone(r.SealedConfig)
	c.Result = bytes.Clone(r.Result)
	c.VariablesRef, c.ResultRef = clonePtr(r.VariablesRef), clonePtr(r.ResultRef)
	c.ResumeInput, c.ResumeInputRef = bytes.Clone(r.ResumeInput), clonePtr(r.ResumeInputRef)
	c.Error = clonePtr(r.Error)
	c.Cost = copyCost(r.Cost)
	c.Agent.Concurrency, c.Agent.Budget = clonePtr(r.Agent.Concurrency), clonePtr(r.Agent.Budget)
	c.Agent.InputSchema = bytes.Clone(r.Agent.InputSchema)
	c.Concurrency, c.Queue = clonePtr(r.Concurrency), clonePtr(r.Queue)
	if r.Interrupt != nil {
		i := *r.Interrupt
		i.Checkpoint, i.CheckpointRef = bytes.Clone(i.Checkpoint), clonePtr(i.CheckpointRef)
		c.Interrupt = &i
	}
	if r.Attempts != nil {
		c.Attempts = make([]sortie.Attempt, len(r.Attempts))
		for i := range r.Attempts {
			c.Attempts[i] = copyAttempt(r.Attempts[i])
		}
	}
	if r.Steps != nil {
		c.Steps = make([]sortie.Step, len(r.Steps))
		for i := range r.Steps {
			c.Steps[i] = r.Steps[i].Clone()
		}
	}
	return &c
}

func copyAttempt(a sortie.Attempt) sortie.Attempt {
	if a.Ref != nil {
		ref := *a.Ref
		ref.Detail = maps.Clone(ref.Detail)
		a.Ref = &ref
	}
	a.Error, a.Usage = clonePtr(a.Error), clonePtr(a.Usage)
	if a.Exit != nil {
		st := *a.Exit
		st.ExitCode = clonePtr(st.ExitCode)
		a.Exit = &st
	}
	return a
}

func copyCost(c *sortie.Cost) *sortie.Cost {
	if c == nil {
		return nil
	}
	out := *c
	out.Components = maps.Clone(c.Components)
	out.Unpriced = slices.Clone(c.Unpriced)
	if c.Attempts != nil {
		out.Attempts = make([]sortie.AttemptCost, len(c.Attempts))
		for i, a := range c.Attempts {
			a.Items = slices.Clone(a.Items)
			out.Attempts[i] = a
		}
	}
	return &out
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
