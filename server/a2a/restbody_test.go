package a2a_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// restAnswer is a REST error body (google.rpc.Status) as the tests read it.
type restAnswer struct {
	Error *struct {
		Code    int              `json:"code"`
		Status  string           `json:"status"`
		Message string           `json:"message"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

// field is what the answer's details name as the field, "" for none.
func (a restAnswer) field() string {
	for _, d := range a.Error.Details {
		if f, ok := d["field"].(string); ok {
			return f
		}
	}
	return ""
}

func postTo(t *testing.T, url, body string, h map[string]string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatalf("POST %s = %d, body not JSON: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode, b
}

// A REST body with a key twice (the message, or the skill in its
// metadata: a2a-go would run whichever came last), a byte-order mark or a
// Content-Encoding is refused before a2a-go decodes it, naming the key or
// header, and starts nothing; JSON-RPC refuses the latter two as well.
func TestRESTBodyShapeEncodingAndBOMAreChecked(t *testing.T) {
	r := newRig(t, &a2aserver.Options{MaxBodyBytes: 8192}, nil)
	m, err := json.Marshal(msg(t, `{"events":0}`, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	good := `{"message":` + string(m) + `}`
	skillTwice := strings.Replace(good, `"skill":"probe"`, `"skill":"probe","skill":"probe2"`, 1)
	if skillTwice == good {
		t.Fatalf("no skill to repeat in %s", good)
	}
	rpc := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":` + good + `}`
	gzip := map[string]string{"Content-Encoding": "gzip"}
	rest, jsonrpc := r.srv.URL+a2aserver.RESTPath+"/message:send", r.srv.URL+a2aserver.JSONRPCPath
	for _, c := range []struct {
		name, url, body string
		h               map[string]string
		code            int
		field, want     string
	}{
		{"message twice", rest, `{"message":` + string(m) + `,"message":` + string(m) + `}`, nil, 400, "body", `duplicate object key "message"`},
		{"skill twice", rest, skillTwice, nil, 400, "message.metadata", `duplicate object key "skill"`},
		{"BOM", rest, "\xef\xbb\xbf" + good, nil, 400, "body", "UTF-8 byte-order mark"},
		{"gzip", rest, good, gzip, 415, "Content-Encoding", `Content-Encoding "gzip" is not supported`},
		{"JSON-RPC BOM", jsonrpc, "\xef\xbb\xbf" + rpc, nil, 200, "body", "UTF-8 byte-order mark"},
		{"JSON-RPC gzip", jsonrpc, rpc, gzip, 415, "Content-Encoding", `Content-Encoding "gzip" is not supported`},
	} {
		code, b := postTo(t, c.url, c.body, c.h)
		var msg, field string
		if c.url == rest {
			var a restAnswer
			if json.Unmarshal(b, &a) == nil && a.Error != nil {
				msg, field = a.Error.Message, a.field()
			}
		} else {
			var a rpcAnswer
			if json.Unmarshal(b, &a) == nil && a.Error != nil && a.Error.Code == -32600 {
				msg = a.Error.Message
				field, _ = a.Error.Data["field"].(string)
			}
		}
		if code != c.code || field != c.field || !strings.Contains(msg, c.want) {
			t.Errorf("%s: POST = %d %s, want %d naming %s saying %q", c.name, code, b, c.code, c.field, c.want)
		}
	}
	page, err := r.host.Engine.List(testCtx(t), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("runs after refused bodies: %d, %v; want none", len(page.Runs), err)
	}
	if code, b := postTo(t, rest, good, nil); code != http.StatusOK {
		t.Errorf("POST %s without a duplicate = %d %s, want 200", rest, code, b)
	}
}
