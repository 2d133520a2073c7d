package main

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
)

var _ sortie.AgentLister = (*liveAgents)(nil)

// liveAgents is serve's agent catalog: an agent of an --agent directory
// is read again when its agent.json changes (its modification time), so
// a new concurrency limit, budget or policy applies to the next
// submission and admission without a restart. A file that no longer
// reads or validates, or names another agent, keeps the last good
// manifest (and is logged). Other agents come from base.
type liveAgents struct {
	base sortie.Agents
	log  *slog.Logger
	mu   sync.Mutex
	// files holds each directory agent's file and last good manifest.
	files map[string]*agentFile
}

type agentFile struct {
	path string
	mod  time.Time
	m    sortie.Manifest
}

// newLiveAgents returns the catalog of base whose agents loaded from dirs
// (in the same order as loaded) are read again when their files change.
func newLiveAgents(base sortie.Agents, dirs []string, loaded []sortie.Manifest, log *slog.Logger) *liveAgents {
	if log == nil {
		log = slog.Default()
	}
	l := &liveAgents{base: base, log: log, files: map[string]*agentFile{}}
	for i, dir := range dirs {
		path := filepath.Join(dir, "agent.json")
		f := &agentFile{path: path, m: loaded[i]}
		if st, err := os.Stat(path); err == nil {
			f.mod = st.ModTime()
		}
		l.files[loaded[i].Name] = f
	}
	return l
}

// Agent implements [sortie.AgentCatalog].
func (l *liveAgents) Agent(ctx context.Context, name string) (sortie.Manifest, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.files[name]
	if !ok {
		return l.base.Agent(ctx, name)
	}
	st, err := os.Stat(f.path)
	if err != nil || st.ModTime().Equal(f.mod) {
		return f.m, nil
	}
	m, err := loadManifest(f.path)
	switch {
	case err != nil:
		l.log.Warn("agent.json changed and does not load; keeping the last manifest", "agent", name, "err", err)
	case m.Name != name:
		l.log.Warn("agent.json changed its agent's name; keeping the last manifest", "agent", name, "new_name", m.Name)
	default:
		f.m = m
		l.log.Info("agent.json reloaded", "agent", name)
	}
	f.mod = st.ModTime()
	return f.m, nil
}

// ListAgents implements [sortie.AgentLister]: base's agents and the
// directories' (each read again when its file changed), sorted by name.
func (l *liveAgents) ListAgents(ctx context.Context) ([]sortie.Manifest, error) {
	l.mu.Lock()
	names := slices.Collect(maps.Keys(l.files))
	l.mu.Unlock()
	all := maps.Clone(l.base)
	if all == nil {
		all = sortie.Agents{}
	}
	for _, name := range names {
		m, err := l.Agent(ctx, name)
		if err != nil {
			return nil, err
		}
		all[name] = m
	}
	return all.ListAgents(ctx)
}
