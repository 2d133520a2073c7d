package terraform

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// gcpAPIs maps resource and data source type prefixes to the API they
// call; the longest prefix wins. A type with none fails the test.
var gcpAPIs = map[string]string{
	"google_cloud_run_v2_":                   "run.googleapis.com",
	"google_service_account":                 "iam.googleapis.com",
	"google_project_iam_custom_role":         "iam.googleapis.com",
	"google_project_iam_member":              "cloudresourcemanager.googleapis.com",
	"google_project":                         "cloudresourcemanager.googleapis.com",
	"google_kms_":                            "cloudkms.googleapis.com",
	"google_secret_manager_":                 "secretmanager.googleapis.com",
	"google_eventarc_":                       "eventarc.googleapis.com",
	"google_storage_project_service_account": "storage.googleapis.com",
	"google_storage_bucket":                  "storage.googleapis.com",
}

// gcpAlsoNeeds are APIs a resource type needs besides its own: Eventarc
// delivers through Pub/Sub topics and subscriptions it creates; what a
// service account's IAM binding grants here (signBlob for payload URLs,
// GKE Workload Identity) is used through the IAM Service Account
// Credentials API.
var gcpAlsoNeeds = map[string]string{"google_eventarc_trigger": "pubsub.googleapis.com",
	"google_service_account_iam_member": "iamcredentials.googleapis.com"}

// notAfterAPIs are blocks that need not wait for google_project_service:
// the project itself is read before any API of it is enabled.
var notAfterAPIs = map[string]bool{"google_project_service.apis": true, "data.google_project.this": true}

func apiOf(t *testing.T, typ string) string {
	t.Helper()
	best := ""
	for p := range gcpAPIs {
		if strings.HasPrefix(typ, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		t.Fatalf("%s: no API known for this type; add it to gcpAPIs", typ)
	}
	return gcpAPIs[best]
}

// TestGCPEnablesTheAPIsItUses checks google_project_service enables
// exactly the APIs of the module's resource types, and that every
// resource waits for them (depends on google_project_service.apis, or on
// a resource that does), so a fresh project applies in one go.
func TestGCPEnablesTheAPIsItUses(t *testing.T) {
	m := parseModule(t, "gcp")
	used := map[string]bool{}
	for _, b := range m.blocks {
		if (b.Type != "resource" && b.Type != "data") || b.Labels[0] == "google_project_service" {
			continue
		}
		used[apiOf(t, b.Labels[0])] = true
		if extra, ok := gcpAlsoNeeds[b.Labels[0]]; ok {
			used[extra] = true
		}
	}
	var want []string
	for api := range used {
		want = append(want, api)
	}
	sort.Strings(want)
	svc := m.block(t, "resource", "google_project_service", "apis")
	if got := m.str(svc, "for_each"); got != "local.apis" {
		t.Fatalf("google_project_service.apis for_each = %s, want local.apis", got)
	}
	enabled := regexp.MustCompile(`"([a-z]+\.googleapis\.com)"`).FindAllStringSubmatch(m.text(m.local("apis")), -1)
	var got []string
	for _, e := range enabled {
		got = append(got, e[1])
	}
	sort.Strings(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("APIs local.apis enables differ from those the module's resources call (-want +module):\n%s", d)
	}
	if got := m.str(svc, "disable_on_destroy"); got != "false" {
		t.Errorf("google_project_service.apis disable_on_destroy = %s, want false (other workloads may use the APIs)", got)
	}

	g := newDepGraph(m)
	for _, b := range m.blocks {
		if b.Type != "resource" && b.Type != "data" {
			continue
		}
		key := blockKey(b)
		if !notAfterAPIs[key] && !g.afterAPIs(key, map[string]bool{}) {
			t.Errorf("%s does not wait for google_project_service.apis (depends_on it, or on a resource that does)", key)
		}
	}
}

// depGraph is what each block refers to (resources and data sources, with
// locals resolved).
type depGraph struct {
	m    *module
	refs map[string][]string
}

func blockKey(b *hclsyntax.Block) string {
	if b.Type == "data" {
		return "data." + b.Labels[0] + "." + b.Labels[1]
	}
	return b.Labels[0] + "." + b.Labels[1]
}

func newDepGraph(m *module) *depGraph {
	g := &depGraph{m: m, refs: map[string][]string{}}
	for _, b := range m.blocks {
		if b.Type == "resource" || b.Type == "data" {
			g.refs[blockKey(b)] = g.bodyRefs(b.Body, map[string]bool{})
		}
	}
	return g
}

// bodyRefs returns the blocks a body's attributes and nested blocks refer to.
func (g *depGraph) bodyRefs(body *hclsyntax.Body, seenLocals map[string]bool) []string {
	var out []string
	for _, a := range body.Attributes {
		out = append(out, g.exprRefs(a.Expr, seenLocals)...)
	}
	for _, b := range body.Blocks {
		out = append(out, g.bodyRefs(b.Body, seenLocals)...)
	}
	return out
}

func (g *depGraph) exprRefs(e hclsyntax.Expression, seenLocals map[string]bool) []string {
	var out []string
	for _, tr := range e.Variables() {
		names := traversalNames(tr)
		switch {
		case len(names) >= 2 && names[0] == "local" && !seenLocals[names[1]]:
			seenLocals[names[1]] = true
			if l := g.m.local(names[1]); l != nil {
				out = append(out, g.exprRefs(l, seenLocals)...)
			}
		case len(names) >= 3 && names[0] == "data":
			out = append(out, "data."+names[1]+"."+names[2])
		case len(names) >= 2 && strings.HasPrefix(names[0], "google_"):
			out = append(out, names[0]+"."+names[1])
		}
	}
	return out
}

func traversalNames(tr hcl.Traversal) []string {
	names := []string{tr.RootName()}
	for _, step := range tr[1:] {
		if a, ok := step.(hcl.TraverseAttr); ok {
			names = append(names, a.Name)
		} else {
			break
		}
	}
	return names
}

// afterAPIs reports whether block key is ordered after the APIs.
func (g *depGraph) afterAPIs(key string, seen map[string]bool) bool {
	if seen[key] {
		return false
	}
	seen[key] = true
	refs := g.refs[key]
	if slices.Contains(refs, "google_project_service.apis") {
		return true
	}
	for _, r := range refs {
		if g.afterAPIs(r, seen) {
			return true
		}
	}
	return false
}
