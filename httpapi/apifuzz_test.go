package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/internal/agenttest"
	"golang.org/x/crypto/ssh"
	_ "modernc.org/sqlite"
)

// A hostile client's pass over every operation of the OpenAPI document:
// malformed, oversized and wrong-typed bodies, bad path IDs, unknown and
// malformed query parameters, wrong content types and wrong methods,
// against serve with a real agent behind its proxy. Every answer must be a
// 2xx or a 4xx in the JSON envelope whose detail names the problem (no 5xx
// but the 503s an operation documents), serve's HTTP server must log no
// panic, and a refused call must leave the ledger as it was.
func TestEveryOperationRefusesBadInputCleanly(t *testing.T) {
	st := agenttest.Serve(t, agenttest.WithoutReaper()) // an accepted create's expiry would change the ledger under a later check
	f := newFuzzer(t, st)
	var doc openAPIDoc
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute) // the budget; the pass takes seconds
	paths := slices.Sorted(mapKeys(doc.Paths))
	for _, path := range paths {
		for _, method := range slices.Sorted(mapKeys(doc.Paths[path])) {
			if time.Now().After(deadline) {
				t.Fatalf("the pass ran out of its budget at %s %s after %d requests", method, path, f.sent)
			}
			f.operation(&doc, strings.ToUpper(method), path, doc.Paths[path][method])
		}
	}
	if errs := st.ServerErrors(); strings.Contains(errs, "panic") {
		t.Fatalf("serve's HTTP server logged a panic:\n%.4000s", errs)
	}
	t.Logf("%d requests over %d paths", f.sent, len(paths))
	if f.sent < 2000 {
		t.Fatalf("only %d requests sent", f.sent)
	}
}

type openAPIDoc struct {
	Paths      map[string]map[string]openAPIOp `json:"paths"`
	Components struct {
		Schemas map[string]openAPISchema `json:"schemas"`
	} `json:"components"`
}

type openAPIOp struct {
	Parameters []struct {
		Name string `json:"name"`
		In   string `json:"in"`
	} `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema openAPISchema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]json.RawMessage `json:"responses"`
	Security  []any                      `json:"security"` // empty (not nil) on the open routes
}

type openAPISchema struct {
	Ref        string                   `json:"$ref"`
	Type       string                   `json:"type"`
	Properties map[string]openAPISchema `json:"properties"`
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type fuzzer struct {
	t       *testing.T
	st      *agenttest.Stack
	db      *sql.DB
	http    *http.Client
	valid   map[string]string // a path parameter's value that names something real
	sent    int
	last    int         // the status of the last request checked
	headers http.Header // set on the requests of check: an empty value removes the header
}

func newFuzzer(t *testing.T, st *agenttest.Stack) *fuzzer {
	db, err := sql.Open("sqlite", "file:"+st.Ledger+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fuzzer{t: t, st: st, db: db, http: &http.Client{Timeout: 5 * time.Second}, valid: map[string]string{}}
	// Real things for the path parameters, so that calls get past lookups.
	f.sandbox()
	var me apiv1.Me
	f.must("GET", "/api/v1/me", "", 200, &me)
	var rts apiv1.RuntimeList
	f.must("GET", "/api/v1/org/default/ws/default/runtimes", "", 200, &rts)
	var se apiv1.Session
	f.must("POST", "/api/v1/org/default/ws/default/sessions", fmt.Sprintf(`{"runtime_id":%q,"title":"t"}`, rts.Items[0].ID), 201, &se)
	var key apiv1.CreatedKey
	f.must("POST", "/api/v1/org/default/keys", `{"name":"spare"}`, 201, &key)
	f.must("POST", "/api/v1/org/default/ws/default/members", `{"email":"ada@example.com","role":"member"}`, 201, nil)
	var secret apiv1.Secret
	f.must("POST", "/api/v1/org/default/secrets", `{"name":"TOKEN","value":"x"}`, 201, &secret)
	var hook apiv1.CreatedWebhook
	f.must("POST", "/api/v1/org/default/webhooks", `{"url":"https://hooks.example.com/sbx","types":["sandbox.*"]}`, 201, &hook)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	var sshKey apiv1.SSHKey
	f.must("POST", "/api/v1/org/default/ssh-keys", fmt.Sprintf(`{"public_key":%q,"name":"laptop","project_id":%q}`,
		ssh.MarshalAuthorizedKey(sshPub), me.Project.ID), 201, &sshKey)
	for k, v := range map[string]string{
		"org": "default", "workspace": "default", "runtime_id": rts.Items[0].ID, "session_id": se.ID, "key": key.Key.ID,
		"member": "ada@example.com", "secret": secret.ID, "user": "ada@example.com", "ref": "sleeper", "name": "git-toolkit",
		"version": "1.0.0", "binding_id": "00000000-0000-0000-0000-000000000000", "link_id": "NOLINK", "snapshot_id": "00000000-0000-0000-0000-000000000000", "volume": "novolume", "template": "base", "build": "00000000-0000-0000-0000-000000000000", "tag": "latest", "ctx": "nocontext", "ssh_key": sshKey.ID,
		"webhook": hook.Webhook.ID, "delivery": "whd_none",
	} {
		f.valid[k] = v
	}
	f.st.Manager.Wait(context.Background()) // what the setup started in the background, settled
	return f
}

// sandbox makes the sandbox the path IDs name, running a command tagged
// sleeper.
func (f *fuzzer) sandbox() {
	var sb apiv1.Sandbox
	f.must("POST", "/api/v1/sandboxes", `{"templateID":"base","waitReady":true}`, 201, &sb)
	f.must("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/commands", `{"cmd":"sleep 600","background":true,"tag":"sleeper"}`, 201, nil)
	f.valid["id"], f.valid["provider_sandbox_id"] = sb.SandboxID, sb.SandboxID
}

// heal undoes what an accepted call did to the sandbox the path IDs name:
// a paused one is resumed, an ended one replaced.
func (f *fuzzer) heal() {
	var sb apiv1.Sandbox
	f.must("GET", "/api/v1/sandboxes/"+f.valid["id"], "", 200, &sb)
	switch sb.State {
	case "paused":
		f.must("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/resume", "{}", 200, nil)
	case "killed", "failed":
		f.sandbox()
	}
}

// must makes a setup request that must answer want.
func (f *fuzzer) must(method, path, body string, want int, out any) {
	f.t.Helper()
	status, _, data := f.do(method, path, "application/json", body)
	if status != want {
		f.t.Fatalf("setup %s %s: %d %s", method, path, status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			f.t.Fatalf("setup %s %s: %v", method, path, err)
		}
	}
}

// do sends one request with the operator's key (an owner of org default)
// and reads at most 64 KiB of the answer; a stream that is still going is
// cut there.
func (f *fuzzer) do(method, path, contentType, body string) (int, http.Header, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.st.URL+path, r)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+f.st.Key)
	if contentType != "" && body != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range f.headers {
		if len(v) == 0 {
			req.Header.Del(k)
			continue
		}
		req.Header[k] = v
	}
	resp, err := f.http.Do(req)
	if err != nil {
		f.t.Fatalf("%s %.200s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var data []byte
	if resp.StatusCode >= 300 || !strings.Contains(resp.Header.Get("Content-Type"), "ndjson") && resp.Header.Get("Content-Type") != "text/event-stream" {
		data, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	}
	return resp.StatusCode, resp.Header, data
}

// fingerprint hashes every row of every table of the ledger, table by table.
func (f *fuzzer) fingerprint() map[string]string {
	out := map[string]string{}
	tables, err := f.db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		tables.Scan(&n)
		names = append(names, n)
	}
	tables.Close()
	for _, n := range names {
		rows, err := f.db.Query(`SELECT * FROM "` + n + `"`)
		if err != nil {
			f.t.Fatal(err)
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			lines = append(lines, fmt.Sprint(vals...))
		}
		rows.Close()
		sort.Strings(lines)
		sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		out[n] = string(sum[:])
	}
	return out
}

// changed names the tables whose rows differ between two fingerprints.
func changed(before, after map[string]string) []string {
	var names []string
	for n, h := range after {
		if before[n] != h {
			names = append(names, n)
		}
	}
	for n := range before {
		if _, ok := after[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// operation sends every bad variant of one operation.
func (f *fuzzer) operation(doc *openAPIDoc, method, path string, op openAPIOp) {
	var pathParams, query []string
	for _, p := range op.Parameters {
		switch p.In {
		case "path":
			pathParams = append(pathParams, p.Name)
		case "query":
			query = append(query, p.Name)
		}
	}
	fill := func(bad string, badParam string) string {
		out := path
		for _, p := range pathParams {
			v := f.valid[p]
			if p == badParam {
				v = bad
			}
			out = strings.Replace(out, "{"+p+"}", v, 1)
		}
		return out
	}
	valid := fill("", "")
	contentType, schema := "", openAPISchema{}
	if op.RequestBody != nil {
		for ct, c := range op.RequestBody.Content {
			contentType, schema = ct, c.Schema
		}
	}
	jsonBody := contentType == "application/json"
	body := func() string { // the least body the route could take
		if jsonBody {
			return "{}"
		}
		return ""
	}

	// Unknown query parameters, on every route.
	f.check(op, method, valid+"?zz=1", contentType, body(), 400)
	// Malformed values of the route's own.
	for _, q := range query {
		if q != "cursor" { // an empty cursor is the first page
			f.check(op, method, valid+"?"+q+"=", contentType, body(), 400)
		}
		for _, v := range []string{"maybe", "-1", "99999999999999999999999", strings.Repeat("z", 300), "%00", "a&" + q + "=b"} {
			f.check(op, method, valid+"?"+q+"="+v, contentType, body(), 0)
		}
	}
	// Bad path IDs.
	for _, p := range pathParams {
		for _, v := range []string{"..", ".", "%2e%2e", "%2E", strings.Repeat("i", 300), "%00", "a%2Fb", "%C3%BC", "'%20OR%201=1", "-1"} {
			f.check(op, method, fill(v, p), contentType, body(), 0)
		}
	}
	// Headers: no key, a key that is no key, in either header; an
	// Idempotency-Key too long; an answer asked for in another type.
	auth := 401
	if op.Security != nil {
		auth = 0 // an open route
	}
	for _, h := range []http.Header{
		{"Authorization": nil}, {"Authorization": {"Bearer " + strings.Repeat("k", 300)}}, {"Authorization": {"Basic Zm9vOmJhcg=="}},
		{"Authorization": nil, "X-Api-Key": {"sbx_nope"}}, {"Authorization": {"Bearer"}},
	} {
		f.headers = h
		f.check(op, method, valid, contentType, body(), auth)
	}
	for _, h := range []http.Header{{"Idempotency-Key": {strings.Repeat("i", 256)}}, {"Accept": {"text/html"}}, {"X-Forwarded-For": {"127.0.0.1"}}} {
		f.headers = h
		f.check(op, method, valid+"?zz=1", contentType, body(), 400) // refused, whatever the header
	}
	f.headers = nil
	// Wrong methods: a 405, unless another operation's path takes the URL.
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if _, ok := doc.Paths[path][strings.ToLower(m)]; !ok {
			want := 405
			if doc.routes(m, valid) {
				want = 0
			}
			f.check(op, m, valid, "application/json", "{}", want)
		}
	}
	if !jsonBody {
		return
	}
	// Wrong content type, and bodies that are not the object asked for.
	f.check(op, method, valid, "text/plain", "{}", 415)
	for _, b := range []string{"null", "[]", "1", `"s"`, "{", `{"zz":1}`, "{}{}", strings.Repeat("[", 100000)} {
		f.check(op, method, valid, contentType, b, 400)
	}
	f.check(op, method, valid, contentType, `{"a":1}`+strings.Repeat(" ", 2<<20), 0) // 400 or 413
	if !slices.Contains([]int{400, 413}, f.last) && (f.last != 503 || op.Responses["503"] == nil) {
		f.t.Errorf("%s %s with a body of 2 MiB: %d, want 400 or 413", method, path, f.last)
	}
	// Each field of the body, with values of every wrong kind.
	for _, field := range slices.Sorted(mapKeys(doc.resolve(schema).Properties)) {
		for _, v := range []string{"null", "12", "-1", "1.5", "1e300", "true", `"s"`, `""`, `{}`, `[]`, `{"zz":1}`, `[{"zz":1}]`, `"` + strings.Repeat("v", 70000) + `"`} {
			f.check(op, method, valid, contentType, `{"`+field+`":`+v+`}`, 0)
		}
	}
}

// routes reports whether an operation of the document takes method on
// the concrete path.
func (d *openAPIDoc) routes(method, path string) bool {
	got := strings.Split(path, "/")
	for template, ops := range d.Paths {
		want := strings.Split(template, "/")
		if _, ok := ops[strings.ToLower(method)]; !ok || len(want) != len(got) {
			continue
		}
		match := true
		for i := range want {
			match = match && (want[i] == got[i] || strings.HasPrefix(want[i], "{") && got[i] != "")
		}
		if match {
			return true
		}
	}
	return false
}

func (d *openAPIDoc) resolve(s openAPISchema) openAPISchema {
	if s.Ref != "" {
		return d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
	}
	return s
}

// check sends one request and holds its answer to the rules; want, when not
// zero, is the status it must have.
func (f *fuzzer) check(op openAPIOp, method, path, contentType, body string, want int) {
	f.t.Helper()
	before := f.fingerprint()
	status, header, data := f.do(method, path, contentType, body)
	f.sent++
	f.last = status
	what := fmt.Sprintf("%s %.200s with %.100q", method, path, body)
	switch {
	case status == http.StatusServiceUnavailable && op.Responses["503"] != nil:
	case status == http.StatusNotImplemented && op.Responses["501"] != nil: // what the test's provider cannot do, said so
	case want != 0 && status != want:
		f.t.Errorf("%s: %d %.300s, want %d", what, status, data, want)
	case status >= 500:
		f.t.Errorf("%s: %d %.300s", what, status, data)
	}
	if status < 400 {
		if method != "GET" {
			f.st.Manager.Wait(context.Background()) // what it started in the background, settled
			f.heal()
		}
		return
	}
	var e apiv1.Error
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if !strings.HasPrefix(header.Get("Content-Type"), "application/json") || dec.Decode(&e) != nil {
		f.t.Errorf("%s: %d answered %q, not the JSON envelope: %.300s", what, status, header.Get("Content-Type"), data)
		return
	}
	if e.Code != status || e.Type == "" || len(e.Detail) < 10 || len(data) > 4096 {
		f.t.Errorf("%s: %d envelope %.300s", what, status, data)
	}
	if status < 500 {
		if tables := changed(before, f.fingerprint()); len(tables) > 0 {
			f.t.Errorf("%s: refused with %d, yet the ledger changed (tables %s)", what, status, strings.Join(tables, ", "))
		}
	}
}
