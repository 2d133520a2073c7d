package a2a

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
)

// cardSource serves the agent card: the host with its agents as skills.
type cardSource struct {
	base      a2a.AgentCard
	publicURL string
}

func newCardSource(o *settings, agents []sortie.Manifest, push bool) *cardSource {
	skills := make([]a2a.AgentSkill, 0, len(agents))
	for _, m := range agents {
		desc := m.Description
		if desc == "" {
			desc = "Runs agent " + m.Name + "."
		}
		if v := inputDescription(m.InputSchema); v != "" {
			desc += " Variables (message data): " + v
		}
		skills = append(skills, a2a.AgentSkill{ID: m.Name, Name: m.Name, Description: desc,
			Tags: []string{"sortie"}, InputModes: []string{"text/plain", "application/json"},
			OutputModes: []string{"application/json", "text/plain"}})
	}
	card := a2a.AgentCard{
		Name: o.Name, Description: o.Description, Version: o.Version, Skills: skills,
		DefaultInputModes: []string{"text/plain", "application/json"}, DefaultOutputModes: []string{"application/json", "text/plain"},
		Capabilities: a2a.AgentCapabilities{Streaming: true, PushNotifications: push, Extensions: []a2a.AgentExtension{{
			URI:         ResumeExtensionURI,
			Description: "Resume SubscribeToTask after a cursor without losing events: every event carries its cursor in metadata key " + MetaCursor + "; send it back in the " + ResumeAfterParam + " service parameter (HTTP header).",
			Params:      map[string]any{"service_parameter": ResumeAfterParam, "metadata_key": MetaCursor},
		}}},
	}
	if o.BearerAuth {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "One of the host's API tokens (SORTIE_API_TOKENS)."}}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{"bearer": a2a.SecuritySchemeScopes{}}}
	}
	if o.DefaultAgent != "" {
		card.Description += " Messages that name no skill (message metadata \"" + SkillKey + "\") run " + o.DefaultAgent + "."
	} else {
		card.Description += " A new task names its skill in message metadata \"" + SkillKey + "\"."
	}
	return &cardSource{base: card, publicURL: strings.TrimRight(o.PublicURL, "/")}
}

// cardFor returns the card with interface URLs under base.
func (c *cardSource) cardFor(base string) *a2a.AgentCard {
	card := c.base
	card.SupportedInterfaces = []*a2a.AgentInterface{
		a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC),
		a2a.NewAgentInterface(base+RESTPath, a2a.TransportProtocolHTTPJSON),
	}
	return &card
}

// ServeHTTP answers GET (and HEAD) with the card as JSON.
func (c *cardSource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	base := c.publicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	b, err := json.Marshal(c.cardFor(base))
	if err != nil {
		http.Error(w, "cannot encode the agent card", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=60")
	_, _ = w.Write(b)
}

// inputDescription is the description of an agent's input schema, what
// its variables do; "" without one.
func inputDescription(schema json.RawMessage) string {
	var s struct {
		Description string `json:"description"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return ""
	}
	return strings.Join(strings.Fields(s.Description), " ")
}
