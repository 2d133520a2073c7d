package server

import (
	"net/http"

	"github.com/sortie-run/sortie/wire"
)

// listAgents: GET /v1/agents. 200 with [wire.AgentList]: the host's
// agents sorted by name, each with its policy defaults and input schema.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	agents, err := s.eng.ListAgents(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.AgentList{Agents: agents})
}

// describeAgent: GET /v1/agents/{name}. 200 with the agent's manifest
// (policy defaults applied, input schema included); 404 not_found for
// an agent the host does not have, 400 invalid_argument naming "agent"
// for a malformed name.
func (s *Server) describeAgent(w http.ResponseWriter, r *http.Request) {
	m, err := s.eng.DescribeAgent(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}
