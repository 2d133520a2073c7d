package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// errNoPushStore answers the push routes of a control plane without
// push configurations.
var errNoPushStore = errors.New("server: the control plane does not store push configurations")

func (s *Server) pushStore() (sortie.PushStore, error) {
	ps, ok := s.eng.ControlPlane().(sortie.PushStore)
	if !ok {
		return nil, errNoPushStore
	}
	return ps, nil
}

func (s *Server) putPush(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	var req wire.PushConfigRequest
	if err == nil {
		err = decode(s.schemas, w, r, "pushconfig", maxSmallBytes, &req)
	}
	cfg := &sortie.PushConfig{RunID: id, ID: r.PathValue("cid"), URL: req.URL, KeyID: req.KeyID}
	if err == nil {
		err = cfg.Validate()
	}
	if k, ok := s.opts.Pushes.(interface{ HasKey(string) bool }); ok && err == nil && !k.HasKey(cfg.KeyID) {
		err = sortie.Invalidf("key_id", "%q is not a webhook signing key of this host", cfg.KeyID)
	}
	if err == nil && s.opts.CheckPushURL != nil {
		if cerr := s.opts.CheckPushURL(cfg.URL); cerr != nil {
			err = sortie.Invalidf("url", "refused by the destination policy: %v", cerr)
		}
	}
	ps, perr := s.pushStore()
	if err == nil {
		err = perr
	}
	if err == nil {
		cfg, err = ps.PutPushConfig(r.Context(), cfg, time.Now().UnixMilli())
	}
	if err == nil {
		cfg, err = s.restartDelivery(r, ps, cfg)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.notify(id)
	writeJSON(w, http.StatusOK, publicPush(*cfg))
}

// restartDelivery clears the failures of a replaced configuration (its
// delivery may have given up on the old URL or key), keeping what was
// delivered: the new target gets the run's next state, or its final one
// if that was never delivered.
func (s *Server) restartDelivery(r *http.Request, ps sortie.PushStore, cfg *sortie.PushConfig) (*sortie.PushConfig, error) {
	d := cfg.Delivery
	if d.Failures == 0 && d.LastError == "" && !d.Done {
		return cfg, nil
	}
	run, err := s.eng.Get(r.Context(), cfg.RunID)
	if err != nil {
		return nil, err
	}
	fresh := sortie.PushDelivery{DeliveredVersion: d.DeliveredVersion}
	fresh.Done = run.State.Terminal() && d.DeliveredVersion >= run.Version
	if err := ps.UpdatePushDelivery(r.Context(), cfg.RunID, cfg.ID, fresh); err != nil {
		return nil, err
	}
	cfg.Delivery = fresh
	return cfg, nil
}

func (s *Server) getPush(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	ps, perr := s.pushStore()
	if err == nil {
		err = perr
	}
	var cfg *sortie.PushConfig
	if err == nil {
		cfg, err = ps.GetPushConfig(r.Context(), id, r.PathValue("cid"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, publicPush(*cfg))
}

func (s *Server) listPush(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	ps, perr := s.pushStore()
	if err == nil {
		err = perr
	}
	var cfgs []sortie.PushConfig
	if err == nil {
		cfgs, err = ps.ListPushConfigs(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]sortie.PushConfig, len(cfgs))
	for i := range cfgs {
		out[i] = publicPush(cfgs[i])
	}
	cfgs = out
	writeJSON(w, http.StatusOK, wire.PushConfigList{PushConfigs: cfgs})
}

func (s *Server) deletePush(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	ps, perr := s.pushStore()
	if err == nil {
		err = perr
	}
	if err == nil {
		err = ps.DeletePushConfig(r.Context(), id, r.PathValue("cid"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
