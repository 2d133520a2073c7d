package a2a_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// rpcAnswer is a JSON-RPC response as the tests read it.
type rpcAnswer struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func postRPC(t *testing.T, r *rig, body string, chunked bool) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+a2aserver.JSONRPCPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if chunked {
		req.ContentLength = -1 // no declared length: the limit cuts the read
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a rpcAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("POST /a2a = %d, body not JSON: %v", resp.StatusCode, err)
	}
	return a
}

// A JSON-RPC body with a key twice, nested too deep, or over the limit
// without a declared length is refused before a2a-go decodes it, as an
// invalid request naming the key or the limit, and starts nothing; the
// same body without the duplicate is served.
func TestJSONRPCBodyShapeIsCheckedBeforeDecoding(t *testing.T) {
	r := newRig(t, &a2aserver.Options{DefaultAgent: "probe", MaxBodyBytes: 8192}, nil)
	params, err := json.Marshal(&a2a.SendMessageRequest{Message: msg(t, `{"events":0}`, "")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, body, field, want string }{
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"SendMessage","params":` + string(params) + `}`, "body", `duplicate object key "id"`},
		{"nested key twice", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"a","messageId":"b"}}}`, "params.message", `duplicate object key "messageId"`},
		{"deep", strings.Repeat("[", 2000) + strings.Repeat("]", 2000), "body", "nested 2000 levels deep"},
		{"oversize, no length", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + strings.Repeat("a", 9000) + `"}}`, "", "over the limit of 8192 bytes"},
	} {
		a := postRPC(t, r, c.body, c.name == "oversize, no length")
		if a.Error == nil || a.Error.Code != -32600 || a.ID != nil || !strings.Contains(a.Error.Message, c.want) {
			t.Errorf("%s: POST /a2a = %+v, want a -32600 error with id null saying %q", c.name, a, c.want)
			continue
		}
		if c.field != "" && a.Error.Data["field"] != c.field {
			t.Errorf("%s: error data %v, want field %q", c.name, a.Error.Data, c.field)
		}
	}
	page, err := r.host.Engine.List(testCtx(t), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("runs after refused bodies: %d, %v; want none", len(page.Runs), err)
	}
	if a := postRPC(t, r, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+string(params)+`}`, false); a.Error != nil || len(a.Result) == 0 {
		t.Errorf("POST /a2a without the duplicate = %+v, want a result", a)
	}
}
