package server

import (
	"net/http"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// PushKeys is an optional interface of [Options.Pushes]: HasKey reports
// whether the host signs webhooks with key ID id ("" names the primary),
// so a push configuration naming another key is refused when it is set
// rather than at its first delivery. The push dispatcher implements it.
type PushKeys interface {
	HasKey(id string) bool
}

func (s *Server) putPush(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	var req wire.PushConfigRequest
	if err == nil {
		err = decode(s.schemas, w, r, "pushconfig", smallLimit, &req)
	}
	cfg := &sortie.PushConfig{RunID: id, ID: r.PathValue("cid"), URL: req.URL, KeyID: req.KeyID}
	if err == nil {
		err = cfg.Validate()
	}
	if k, ok := s.opts.Pushes.(PushKeys); ok && err == nil && !k.HasKey(cfg.KeyID) {
		err = sortie.Invalidf("key_id", "%.64q is not a webhook signing key of this host", cfg.KeyID)
	}
	if err == nil && s.opts.CheckPushURL != nil {
		if cerr := s.opts.CheckPushURL(cfg.URL); cerr != nil {
			err = sortie.Invalidf("url", "refused by the destination policy: %v", cerr)
		}
	}
	ps := s.eng.ControlPlane()
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
	var cfg *sortie.PushConfig
	if err == nil {
		cfg, err = s.eng.ControlPlane().GetPushConfig(r.Context(), id, r.PathValue("cid"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, publicPush(*cfg))
}

func (s *Server) listPush(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	var cfgs []sortie.PushConfig
	if err == nil {
		cfgs, err = s.eng.ControlPlane().ListPushConfigs(r.Context(), id)
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
	if err == nil {
		err = s.eng.ControlPlane().DeletePushConfig(r.Context(), id, r.PathValue("cid"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
